# The exactness contract (docs/exactness.md) forbids flags that let a compiler reorder, contract or
# approximate floating-point arithmetic or flush subnormals to zero: with any of them the backends
# would no longer give the reference's bits. Configuring with one fails here, naming it.
set(SPECDEC_FORBIDDEN_FLAGS
  -ffast-math -Ofast -funsafe-math-optimizations -fassociative-math -freciprocal-math -ffinite-math-only
  -fcx-limited-range -ffp-contract=fast -ffp-contract=on -mdaz-ftz
  --use_fast_math -use_fast_math --fmad=true -fmad=true --ftz=true -ftz=true
  --prec-div=false -prec-div=false --prec-sqrt=false -prec-sqrt=false)

function(specdec_check_flags)
  set(vars CMAKE_C_FLAGS CMAKE_CXX_FLAGS CMAKE_CUDA_FLAGS)
  foreach(config DEBUG RELEASE RELWITHDEBINFO MINSIZEREL)
    list(APPEND vars CMAKE_C_FLAGS_${config} CMAKE_CXX_FLAGS_${config} CMAKE_CUDA_FLAGS_${config})
  endforeach()
  # (CFLAGS, CXXFLAGS and CUDAFLAGS from the environment arrive through these on the first configure.)
  foreach(var ${vars})
    separate_arguments(words UNIX_COMMAND "${${var}}")
    foreach(word ${words})
      if(word IN_LIST SPECDEC_FORBIDDEN_FLAGS)
        message(FATAL_ERROR "specdec: ${var} contains ${word}, which the exactness contract forbids "
                            "(docs/exactness.md): results would no longer match the reference bit for bit. "
                            "Remove it.")
      endif()
    endforeach()
  endforeach()
endfunction()
specdec_check_flags()
