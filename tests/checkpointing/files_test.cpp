// Files as checkpoints write them: a large page-aligned first piece goes to the disk straight
// from memory (O_DIRECT) and the rest through the page cache; on a file system that refuses
// O_DIRECT (tmpfs) everything goes through the cache. The bytes are the same either way.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <random>
#include <span>
#include <vector>

#include "checkpointing/files.h"
#include "support/checkpoint_data.h"

namespace parax::checkpointing {
namespace {

struct FreeDeleter {
  void operator()(std::byte* p) const { std::free(p); }
};

std::vector<std::byte> read_back(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::vector<char> chars((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::byte> out(chars.size());
  std::memcpy(out.data(), chars.data(), chars.size());
  return out;
}

void check_round_trips(const std::string& dir) {
  constexpr size_t kMax = (size_t(1) << 20) + 8192;
  std::unique_ptr<std::byte, FreeDeleter> page(
      static_cast<std::byte*>(std::aligned_alloc(4096, kMax)));
  std::mt19937 gen(3);
  for (size_t i = 0; i < kMax; ++i) page.get()[i] = std::byte(gen());
  const std::byte tail[5] = {std::byte{1}, std::byte{2}, std::byte{3}, std::byte{4}, std::byte{5}};
  struct Case {
    size_t offset, size;  // of the first piece in the page-aligned buffer
  };
  for (const Case c : {Case{0, size_t(256) << 10}, Case{0, (size_t(256) << 10) + 1},
                       Case{0, (size_t(1) << 20) + 4097}, Case{0, 4096}, Case{0, 0},
                       Case{64, size_t(1) << 20}, Case{4096, (size_t(512) << 10) - 3}}) {
    const std::span<const std::byte> pieces[2] = {{page.get() + c.offset, c.size}, tail};
    const std::string path = dir + "/f";
    files::write_file(path, pieces, /*flush=*/c.size % 2 == 0);
    std::vector<std::byte> want(page.get() + c.offset, page.get() + c.offset + c.size);
    want.insert(want.end(), std::begin(tail), std::end(tail));
    EXPECT_EQ(read_back(path), want) << "offset " << c.offset << ", size " << c.size;
    // a second write replaces the file whole
    files::write_file(path, std::span(pieces + 1, 1), false);
    EXPECT_EQ(read_back(path).size(), sizeof tail);
  }
}

TEST(CheckpointFiles, WritesTheSameBytesDirectOrThroughTheCache) {
  testing_support::TempDir dir;
  check_round_trips(dir.str());
  if (std::filesystem::is_directory("/dev/shm")) {  // tmpfs: O_DIRECT refused at open
    const std::string shm = "/dev/shm/parax-files-" + std::to_string(::getpid());
    std::filesystem::create_directories(shm);
    check_round_trips(shm);
    std::filesystem::remove_all(shm);
  }
}

TEST(CheckpointFiles, ErrorsNameThePath) {
  testing_support::TempDir dir;
  const std::byte b[1] = {std::byte{0}};
  const std::span<const std::byte> piece(b);
  try {
    files::write_file(dir / "no/such/dir/f", std::span(&piece, 1));
    FAIL() << "no exception";
  } catch (const RuntimeError& e) {
    EXPECT_NE(std::string(e.what()).find("cannot create " + (dir / "no/such/dir/f")),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace parax::checkpointing
