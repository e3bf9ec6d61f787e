#include "reference/io/input_file.hpp"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <fstream>

#include "reference/core/error.hpp"

namespace specdec {

namespace {

const char* kind_of(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a pipe (FIFO)";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

}  // namespace

uint64_t check_input_file(const std::string& path, const std::string& what, uint64_t max_bytes) {
  struct stat st{};
  if (::stat(path.c_str(), &st) != 0)
    throw Error("cannot open " + what + " '" + path + "': " + std::strerror(errno));
  if (!S_ISREG(st.st_mode)) throw Error(what + " '" + path + "' is " + kind_of(st.st_mode) + ", expected a regular file");
  const uint64_t size = uint64_t(st.st_size);
  if (size > max_bytes)
    throw Error(what + " '" + path + "' is " + std::to_string(size) + " bytes, more than the limit of " +
                std::to_string(max_bytes));
  return size;
}

std::string read_input_file(const std::string& path, const std::string& what, uint64_t max_bytes) {
  const uint64_t size = check_input_file(path, what, max_bytes);
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error("cannot open " + what + " '" + path + "': " + std::strerror(errno));
  std::string bytes(size, '\0');
  in.read(bytes.data(), std::streamsize(size));
  if (std::uint64_t(in.gcount()) != size) throw Error(what + " '" + path + "': read failed (the file changed while it was read?)");
  // A file that grew after stat: refuse rather than read an unbounded tail.
  if (in.peek() != std::char_traits<char>::eof())
    throw Error(what + " '" + path + "' grew while it was read");
  return bytes;
}

}  // namespace specdec
