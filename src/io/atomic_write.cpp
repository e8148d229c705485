#include "io/atomic_write.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "core/op_error.hpp"
#include "tapeflow/core/error.hpp"

namespace tapeflow::io::detail {

namespace {
[[noreturn]] void throw_errno(const char* op, const std::string& what,
                              const std::string& path, int err) {
  throw op_error<IOError>(op, what, " ", path, " failed: ", std::strerror(err));
}
}  // namespace

std::string temp_path_for(const std::string& path) {
  // The pid first (remove_stale_temps reads it), then a count of this
  // process's writes: two threads saving one path must not share a file.
  static std::atomic<uint64_t> writes{0};
  return path + ".tmp-" + std::to_string(::getpid()) + "-" +
         std::to_string(writes.fetch_add(1));
}

void fsync_path(const std::string& path, bool directory, const char* op) {
  const int fd =
      ::open(path.c_str(),
             (directory ? O_RDONLY | O_DIRECTORY : O_RDONLY) | O_CLOEXEC);
  if (fd < 0) throw_errno(op, "opening", path, errno);
  int rc;
  do {
    rc = ::fsync(fd);
  } while (rc != 0 && errno == EINTR);
  const int err = errno;
  ::close(fd);
  // Some file systems cannot fsync a directory (EINVAL): nothing to wait for.
  if (rc != 0 && !(directory && (err == EINVAL || err == EBADF)))
    throw_errno(op, "fsync of", path, err);
}

void write_atomically(
    const std::string& path, const char* op,
    const std::function<void(const std::string& tmp)>& write) {
  const std::string tmp = temp_path_for(path);
  ::unlink(tmp.c_str());  // a leftover of an earlier process with our pid
  try {
    write(tmp);
    fsync_path(tmp, false, op);
    if (::rename(tmp.c_str(), path.c_str()) != 0)
      throw_errno(op, "renaming " + tmp + " to", path, errno);
  } catch (...) {
    ::unlink(tmp.c_str());
    throw;
  }
  std::string dir = std::filesystem::path(path).parent_path().string();
  fsync_path(dir.empty() ? "." : dir, true, op);
}

}  // namespace tapeflow::io::detail
