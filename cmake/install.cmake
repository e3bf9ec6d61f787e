# The plug-in SDK that `cmake --install build --prefix P` puts under P, for backends built out of
# tree (runtime/plugin_api.hpp, examples/plugin_backend):
#   P/include/specdec/   the reference's headers, runtime/plugin_api.hpp and the
#                        generated specdec/version.hpp and specdec/plugin_abi.hpp (the headers'
#                        digest), at the same relative paths as in the tree
#   P/lib/               libspecdec_reference.a (position-independent: it links into a .so)
#   P/lib/cmake/specdec/ specdecConfig.cmake, its version file (exact version: a plug-in shares
#                        C++ types with specdec) and the exported targets
# find_package(specdec CONFIG REQUIRED) then gives
#   specdec::reference    the reference library with its include directories and dependencies
#                         (Eigen, nlohmann_json, Threads, OpenMP when built with it)
#   specdec::plugin_sdk   specdec::reference plus what a plug-in needs: C++20, the exactness flags
#                         (-ffp-contract=off -fno-fast-math) and --exclude-libs,ALL so that the
#                         reference's symbols stay private to the plug-in
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

# A shared library can only hold position-independent code. This changes no result
# (docs/exactness.md: the arithmetic is fixed by the exactness flags, not by code placement).
set_target_properties(specdec_reference PROPERTIES POSITION_INDEPENDENT_CODE ON EXPORT_NAME reference)

# specdec/plugin_abi.hpp: the digest of the headers a plug-in compiles against, regenerated when
# any of them changes (cmake/plugin_abi_digest.cmake).
file(GLOB_RECURSE SPECDEC_SDK_HEADERS CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/reference/*.hpp)
set(SPECDEC_PLUGIN_ABI_HEADER ${CMAKE_BINARY_DIR}/generated/specdec/plugin_abi.hpp)
add_custom_command(OUTPUT ${SPECDEC_PLUGIN_ABI_HEADER}
                   COMMAND ${CMAKE_COMMAND} -DSOURCE_DIR=${PROJECT_SOURCE_DIR} -DOUT=${SPECDEC_PLUGIN_ABI_HEADER}
                           -P ${PROJECT_SOURCE_DIR}/cmake/plugin_abi_digest.cmake
                   DEPENDS ${SPECDEC_SDK_HEADERS} ${PROJECT_SOURCE_DIR}/runtime/plugin_api.hpp
                           ${PROJECT_SOURCE_DIR}/cmake/plugin_abi_digest.cmake
                   COMMENT "Digest of the plug-in SDK's headers")
add_custom_target(specdec_plugin_abi DEPENDS ${SPECDEC_PLUGIN_ABI_HEADER})
if(TARGET specdec_runtime)
  add_dependencies(specdec_runtime specdec_plugin_abi)
endif()

add_library(specdec_plugin_sdk INTERFACE)
add_dependencies(specdec_plugin_sdk specdec_plugin_abi)
set_target_properties(specdec_plugin_sdk PROPERTIES EXPORT_NAME plugin_sdk)
target_link_libraries(specdec_plugin_sdk INTERFACE specdec_reference)
target_compile_features(specdec_plugin_sdk INTERFACE cxx_std_20)
target_compile_options(specdec_plugin_sdk INTERFACE $<$<COMPILE_LANGUAGE:C,CXX>:-ffp-contract=off>
                                                    $<$<COMPILE_LANGUAGE:C,CXX>:-fno-fast-math>)
target_link_options(specdec_plugin_sdk INTERFACE LINKER:--exclude-libs,ALL)
target_include_directories(specdec_plugin_sdk INTERFACE $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}>
                                                        $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}/specdec>)
add_library(specdec::plugin_sdk ALIAS specdec_plugin_sdk)

set(SPECDEC_SDK_INCLUDE ${CMAKE_INSTALL_INCLUDEDIR}/specdec)
set(SPECDEC_SDK_CMAKE ${CMAKE_INSTALL_LIBDIR}/cmake/specdec)
install(TARGETS specdec_reference specdec_plugin_sdk EXPORT specdecTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT sdk)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/reference/ DESTINATION ${SPECDEC_SDK_INCLUDE}/reference COMPONENT sdk
        FILES_MATCHING PATTERN "*.hpp")
install(FILES ${PROJECT_SOURCE_DIR}/runtime/plugin_api.hpp DESTINATION ${SPECDEC_SDK_INCLUDE}/runtime
        COMPONENT sdk)
install(FILES ${CMAKE_BINARY_DIR}/generated/specdec/version.hpp ${SPECDEC_PLUGIN_ABI_HEADER}
        DESTINATION ${SPECDEC_SDK_INCLUDE}/specdec COMPONENT sdk)
install(EXPORT specdecTargets NAMESPACE specdec:: DESTINATION ${SPECDEC_SDK_CMAKE} COMPONENT sdk)
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/specdecConfig.cmake.in ${CMAKE_BINARY_DIR}/specdecConfig.cmake
                              INSTALL_DESTINATION ${SPECDEC_SDK_CMAKE})
write_basic_package_version_file(${CMAKE_BINARY_DIR}/specdecConfigVersion.cmake VERSION ${PROJECT_VERSION}
                                 COMPATIBILITY ExactVersion)
install(FILES ${CMAKE_BINARY_DIR}/specdecConfig.cmake ${CMAKE_BINARY_DIR}/specdecConfigVersion.cmake
        DESTINATION ${SPECDEC_SDK_CMAKE} COMPONENT sdk)
