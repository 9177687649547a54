// The filesystem as checkpoints need it: files written whole and flushed to the disk,
// directories committed by rename, and reads at offsets. Every failure throws
// RuntimeError naming the path and the system's reason.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace parax::checkpointing::files {

// Creates `path` and its missing parents.
void make_dirs(const std::string& path);
// Creates (or replaces) the file `path` holding `pieces` one after the other, and (when
// `flush`) flushes it to the disk (fsync) before returning. Many files written without
// `flush` are flushed together, much faster, by sync_filesystem.
// A large page-aligned first piece goes to the disk straight from memory (O_DIRECT), where the
// file system allows it.
void write_file(const std::string& path, std::span<const std::span<const std::byte>> pieces,
                bool flush = true);
void write_text(const std::string& path, const std::string& text, bool flush = true);
// Flushes a directory's entries (the files created or renamed in it) to the disk.
void sync_dir(const std::string& path);
// Flushes everything written to the filesystem holding `path` (syncfs), files and
// directories alike.
void sync_filesystem(const std::string& path);
// Returns the whole file.
std::string read_text(const std::string& path);

bool exists(const std::string& path);
bool is_dir(const std::string& path);
// Returns the names in a directory (not "." or ".."), sorted.
std::vector<std::string> list_dir(const std::string& path);
void remove_all(const std::string& path);
// rename(2): `to` must not exist or be an empty directory.
void rename(const std::string& from, const std::string& to);
// Swaps two existing paths in one step (renameat2 RENAME_EXCHANGE).
void exchange(const std::string& a, const std::string& b);
// Returns `path` made absolute (not resolving links), without a trailing slash.
std::string absolute(const std::string& path);

// A file open for reading.
class Reader {
 public:
  // Opens `path`; `missing_ok` makes a missing file an invalid Reader instead of an error.
  explicit Reader(const std::string& path, bool missing_ok = false);
  ~Reader();
  Reader(const Reader&) = delete;
  Reader& operator=(const Reader&) = delete;
  bool valid() const { return fd_ >= 0; }
  int64_t size() const { return size_; }
  const std::string& path() const { return path_; }
  // Reads exactly `n` bytes at `offset` into `out`; a short file throws ValueError.
  void read_at(int64_t offset, size_t n, void* out) const;

 private:
  std::string path_;
  int fd_ = -1;
  int64_t size_ = 0;
};

}  // namespace parax::checkpointing::files
