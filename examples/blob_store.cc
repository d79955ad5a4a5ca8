// blob_store: cairn as a store of large blobs (64 KiB to 4 MiB). Writes
// blobs and a little metadata, reads parts of blobs without reading them
// whole, reads a whole blob without copying it out of the value cache, and
// lists the blobs with a bounded scan, then takes a checkpoint (an
// openable copy of the live store, in <directory>.checkpoint) and opens it.
// Usage: blob_store <directory>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

#include "cairn/db.h"

namespace {

// Blob i's bytes are a function of i and the position, so any range of it
// can be checked without keeping it.
char BlobByte(int i, uint64_t pos) { return static_cast<char>((pos * 131 + i * 7) >> 3); }

std::string BlobKey(int i) {
  char key[32];
  std::snprintf(key, sizeof key, "blob/%04d", i);
  return key;
}

size_t BlobSize(int i) { return size_t{64} << 10 << (i % 7); }  // 64 KiB .. 4 MiB

bool Fail(const char* what, const absl::Status& s) {
  std::fprintf(stderr, "blob_store: %s: %s\n", what, s.ToString().c_str());
  return false;
}

bool Run(const std::string& dir) {
  cairn::Options options;
  options.value_cache_size = 32u << 20;  // so that Get(PinnableValue*) can share
  auto opened = cairn::DB::Open(options, dir);
  if (!opened.ok()) return Fail("open", opened.status());
  cairn::DB& db = **opened;

  constexpr int kBlobs = 14;
  for (int i = 0; i < kBlobs; ++i) {
    std::string blob(BlobSize(i), '\0');
    for (uint64_t p = 0; p < blob.size(); ++p) blob[p] = BlobByte(i, p);
    cairn::WriteBatch batch;  // the blob and its metadata land together
    batch.Put(BlobKey(i), blob);
    batch.Put("meta/" + BlobKey(i), std::to_string(blob.size()));
    absl::Status s = db.Write(cairn::WriteOptions(), batch);
    if (!s.ok()) return Fail("write", s);
  }

  // A ranged read: 4 KiB from the middle of the largest blob. A value over
  // 64 KiB is stored in 64 KiB chunks, each with its own checksum, so only
  // the record's header, its chunk table and the chunk holding the range
  // are read, and that chunk is verified.
  const int big = 6;  // 4 MiB
  const uint64_t before = db.GetStats().vlog_bytes_read;
  std::string range;
  absl::Status s = db.GetRange(cairn::ReadOptions(), BlobKey(big), 1u << 20, 4096, &range);
  if (!s.ok()) return Fail("range", s);
  const uint64_t range_read = db.GetStats().vlog_bytes_read - before;
  for (uint64_t p = 0; p < range.size(); ++p) {
    if (range[p] != BlobByte(big, (1u << 20) + p)) return Fail("range", absl::DataLossError("bytes"));
  }
  // A range that runs past the end is cut at the end.
  s = db.GetRange(cairn::ReadOptions(), BlobKey(0), BlobSize(0) - 10, 4096, &range);
  if (!s.ok() || range.size() != 10) return Fail("range at the end", s);

  // A whole blob, twice: the second Get shares the cached bytes.
  cairn::PinnableValue value;
  for (int round = 0; round < 2; ++round) {
    s = db.Get(cairn::ReadOptions(), BlobKey(3), &value);
    if (!s.ok() || value.size() != BlobSize(3)) return Fail("get", s);
  }
  const bool shared = value.pinned();

  // The blobs, by a scan bounded to the "blob/" keys: the metadata after
  // them is never read.
  const std::string_view lower = "blob/", upper = "blob0";  // '0' follows '/'
  cairn::ReadOptions scan;
  scan.iterate_lower_bound = &lower;
  scan.iterate_upper_bound = &upper;
  auto it = db.NewIterator(scan);
  int listed = 0;
  uint64_t bytes = 0;
  for (it->SeekToFirst(); it->Valid(); it->Next(), ++listed) bytes += it->value().size();
  if (!it->status().ok()) return Fail("scan", it->status());
  if (listed != kBlobs) return Fail("scan", absl::InternalError("wrong blob count"));

  // A consistent copy of the live store, for a backup or a replica: tables
  // and sealed segments are hard-linked, so it costs about one segment of
  // copying. The copy is a database of its own.
  const std::string copy = dir + ".checkpoint";
  auto checkpoint = db.CreateCheckpoint(copy);
  if (!checkpoint.ok()) return Fail("checkpoint", checkpoint.status());
  {
    auto reopened = cairn::DB::Open(options, copy);
    if (!reopened.ok()) return Fail("open the checkpoint", reopened.status());
    std::string meta;
    auto got = (*reopened)->Get(cairn::ReadOptions(), "meta/" + BlobKey(0), &meta);
    if (!got.ok()) return Fail("read the checkpoint", got);
  }

  std::printf("blob_store: %d blobs (%.1f MiB) listed; a 4 KiB range read %llu value-log "
              "bytes; second Get %s; checkpoint in %s: %llu files linked, %llu bytes copied\n",
              listed, bytes / 1048576.0, static_cast<unsigned long long>(range_read),
              shared ? "shared the cached value" : "copied", copy.c_str(),
              static_cast<unsigned long long>(checkpoint->files_linked),
              static_cast<unsigned long long>(checkpoint->bytes_copied));
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s <directory>\n", argv[0]);
    return 2;
  }
  return Run(argv[1]) ? 0 : 1;
}
