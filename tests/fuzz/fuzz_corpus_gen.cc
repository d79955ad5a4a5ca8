// fuzz_corpus_gen writes the seed corpus of every fuzz target with the real
// writers: a WAL from LogWriter, blocks from BlockBuilder, tables, the
// MANIFEST and value-log segments from a real database on a MemoryFileSystem,
// a segment from SegmentWriter, filters from BloomFilterBuilder. Each file is
// laid out as its target reads its input (see each *_fuzz.cc).
//
//   fuzz_corpus_gen <out_dir>     (writes <out_dir>/<target>/seed-N)
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/db_impl.h"
#include "io/memory_file_system.h"
#include "lsm/block_builder.h"
#include "lsm/bloom_filter.h"
#include "lsm/dbformat.h"
#include "lsm/filename.h"
#include "lsm/log_writer.h"
#include "lsm/version_edit.h"
#include "vlog/segment_writer.h"

namespace cairn {
namespace {

namespace stdfs = std::filesystem;

class Corpus {
 public:
  explicit Corpus(stdfs::path dir) : dir_(std::move(dir)) {}
  void Add(const std::string& target, const std::string& bytes) {
    const stdfs::path d = dir_ / target;
    stdfs::create_directories(d);
    std::ofstream out(d / absl::StrCat("seed-", counts_[target]++), std::ios::binary);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  }

 private:
  stdfs::path dir_;
  std::map<std::string, int> counts_;
};

std::string Piece(std::string_view s) {
  std::string out(1, static_cast<char>(s.size()));
  out.append(s.substr(0, 255));
  return out;
}

void Check(const absl::Status& s, const char* what) {
  if (!s.ok()) {
    std::fprintf(stderr, "%s: %s\n", what, s.ToString().c_str());
    std::exit(1);
  }
}

void WalSeeds(Corpus* c) {
  for (int variant = 0; variant < 3; ++variant) {
    io::MemoryFileSystem fs;
    auto file = fs.NewWritableFile("/000007.log", {});
    Check(file.status(), "wal file");
    auto w = lsm::LogWriter::Create(std::move(*file), 7);
    Check(w.status(), "log writer");
    const int records = variant == 0 ? 1 : 6;
    for (int i = 0; i < records; ++i) {
      const size_t len = variant == 2 && i == 3 ? 70000 : 10 + i * 300;  // one spans blocks
      Check((*w)->AddRecord(std::string(len, static_cast<char>('a' + i))), "add record");
    }
    Check((*w)->Close(), "close");
    auto bytes = fs.ReadFileToString("/000007.log");
    Check(bytes.status(), "read wal");
    c->Add("wal_reader_fuzz", *bytes);
    if (variant == 1) {
      c->Add("wal_reader_fuzz", bytes->substr(0, bytes->size() - 5));  // torn
      // Format 3: the zeros a writer fills ahead of its appends, left by a
      // crash (a clean end), and zeros after a record cut short (torn).
      c->Add("wal_reader_fuzz", *bytes + std::string(4096, '\0'));
      c->Add("wal_reader_fuzz", bytes->substr(0, bytes->size() - 5) + std::string(4096, '\0'));
    }
  }
}

void BlockSeeds(Corpus* c) {
  for (int restart : {1, 4, 16}) {
    lsm::BlockBuilder b(restart);
    std::string first;
    for (int i = 0; i < 40; ++i) {
      std::string ikey;
      lsm::AppendInternalKey(&ikey, absl::StrFormat("user%04d", i * 3), 100 - i,
                             i % 5 == 0 ? lsm::ValueType::kDeletion : lsm::ValueType::kValue);
      if (first.empty()) first = absl::StrFormat("user%04d", 30);
      b.Add(ikey, i % 5 == 0 ? "" : absl::StrCat("value", i));
    }
    c->Add("sst_block_fuzz", Piece(first) + std::string(b.Finish()));
  }
}

void BloomSeeds(Corpus* c) {
  for (int bits : {1, 10}) {
    lsm::BloomFilterBuilder b(bits);
    std::vector<std::string> keys;
    for (int i = 0; i < 16; ++i) keys.push_back(absl::StrCat("key", i));
    for (const auto& k : keys) b.AddKey(k);
    std::string seed(1, static_cast<char>(bits - 1));
    seed += Piece(b.Finish());
    for (const auto& k : keys) seed += Piece(k);
    seed += Piece("absent");
    c->Add("bloom_filter_fuzz", seed);
  }
}

void SegmentSeeds(Corpus* c) {
  for (int variant = 0; variant < 4; ++variant) {
    const bool compress = (variant & 1) != 0;
    io::MemoryFileSystem fs;
    vlog::SegmentWriterOptions o;
    o.compress = compress;
    if (variant >= 2) o.chunk_size = 128;  // most values chunked
    auto w = vlog::SegmentWriter::Create(&fs, "/000009.vlog", 9, o);
    Check(w.status(), "segment writer");
    for (int i = 0; i < 12; ++i) {
      Check((*w)->Append(absl::StrCat("key", i), std::string(100 + i * 50, 'v')).status(),
            "append");
    }
    Check((*w)->Close(), "close segment");
    auto bytes = fs.ReadFileToString("/000009.vlog");
    Check(bytes.status(), "read segment");
    c->Add("vlog_record_fuzz", std::string(1, '\x01') + *bytes);   // torn tails allowed
    c->Add("vlog_record_fuzz", std::string(1, '\x06') + *bytes);   // sealed
    c->Add("vlog_record_fuzz", std::string(1, '\x01') + bytes->substr(0, bytes->size() - 7));
    c->Add("vlog_record_fuzz", std::string(1, '\x00') + bytes->substr(28));  // one record first
    if (variant >= 2) {
      // The first record's chunked value alone (after its 13-byte header
      // and 4-byte key).
      c->Add("vlog_record_fuzz", std::string(1, '\x31') + bytes->substr(28 + 13 + 4));
    }
  }
}

// A real database: its tables, MANIFEST and segments.
void DatabaseSeeds(Corpus* c) {
  auto fs = std::make_shared<io::MemoryFileSystem>();
  Options o;
  o.memtable_size = 64 << 10;
  o.block_size = 512;
  o.value_separation_threshold = 100;
  auto db = OpenWithFileSystem(o, "/db", fs);
  if (absl::IsUnimplemented(db.status())) {
    o.value_separation_threshold = kInlineValues;
    db = OpenWithFileSystem(o, "/db", fs);
  }
  Check(db.status(), "open db");
  std::mt19937_64 rng(7);
  for (int round = 0; round < 3; ++round) {
    for (int i = 0; i < 60; ++i) {
      const std::string key = absl::StrFormat("key%04d", static_cast<int>(rng() % 100));
      // Puts only: a Delete currently trips UBSan in MemTable::Add
      // (memcpy from the null data() of an empty value).
      Check((*db)->Put(WriteOptions(), key, std::string(1 + rng() % 300, 'a' + i % 26)), "put");
    }
    Check((*db)->Flush(), "flush");
  }
  db->reset();
  auto names = fs->ListDir("/db");
  Check(names.status(), "list");
  for (const std::string& name : *names) {
    uint64_t number;
    lsm::FileType type;
    if (!lsm::ParseFileName(name, &number, &type)) continue;
    auto bytes = fs->ReadFileToString(io::JoinPath("/db", name));
    Check(bytes.status(), "read db file");
    switch (type) {
      case lsm::FileType::kTable:
        c->Add("sst_footer_index_fuzz", *bytes);
        c->Add("sst_table_fuzz", Piece("key0042") + *bytes);
        break;
      case lsm::FileType::kManifest:
        c->Add("manifest_fuzz", std::string(1, '\0') + *bytes);
        break;
      default: break;
    }
  }
  // Edits framed by the target (mode 1).
  std::string framed(1, '\x01');
  lsm::VersionEdit snapshot;
  snapshot.SetComparatorName(lsm::kComparatorName);
  snapshot.SetLogNumber(3);
  snapshot.SetNextFileNumber(10);
  snapshot.SetLastSequence(40);
  std::string enc;
  snapshot.EncodeTo(&enc);
  framed += Piece(enc);
  lsm::VersionEdit add;
  lsm::FileMetaData f;
  f.number = 5;
  f.file_size = 1000;
  lsm::AppendInternalKey(&f.smallest, "a", 1, lsm::ValueType::kValue);
  lsm::AppendInternalKey(&f.largest, "m", 9, lsm::ValueType::kValue);
  f.smallest_seq = 1;
  f.largest_seq = 9;
  f.num_entries = 9;
  add.AddFile(0, f);
  add.AddExtension(1, "segment-state");
  enc.clear();
  add.EncodeTo(&enc);
  framed += Piece(enc);
  c->Add("manifest_fuzz", framed);
  c->Add("manifest_fuzz", std::string(1, '\0') + enc);
}

void ApiSeeds(Corpus* c) {
  std::mt19937_64 rng(11);
  for (int i = 0; i < 6; ++i) {
    std::string s(1, static_cast<char>(i));
    const size_t len = 200 + 400 * i;
    for (size_t j = 0; j < len; ++j) s.push_back(static_cast<char>(rng()));
    c->Add("api_ops_fuzz", s);
  }
}

}  // namespace
}  // namespace cairn

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: fuzz_corpus_gen <out_dir>\n");
    return 2;
  }
  cairn::Corpus c(argv[1]);
  cairn::WalSeeds(&c);
  cairn::BlockSeeds(&c);
  cairn::BloomSeeds(&c);
  cairn::SegmentSeeds(&c);
  cairn::DatabaseSeeds(&c);
  cairn::ApiSeeds(&c);
  return 0;
}
