#pragma once
// Crash-safe file replacement shared by the writers of tpf::io.
#include <functional>
#include <string>

namespace tapeflow::io::detail {

/**
 * "<path>.tmp-<pid>-<k>", k counting this process's writes: where
 * write_atomically() writes before renaming.
 */
std::string temp_path_for(const std::string& path);

/**
 * Calls `write(tmp)` to create the file `tmp`, then fsyncs it, renames it over
 * `path` and fsyncs the directory: a crash at any moment leaves `path` with
 * its old content or its complete new content. On failure the temporary file
 * is removed and the error (IOError for the file system) propagates. `op`
 * names the public function in messages.
 */
void write_atomically(const std::string& path, const char* op,
                      const std::function<void(const std::string& tmp)>& write);

/** fsync of a file or directory by path; throws IOError. */
void fsync_path(const std::string& path, bool directory, const char* op);

}  // namespace tapeflow::io::detail
