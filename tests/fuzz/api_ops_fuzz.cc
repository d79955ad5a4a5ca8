// Fuzzes the public API against a std::map oracle: the input drives a
// sequence of Put, Delete, batches, Get, full scans, seeks, Flush, CompactRange
// and reopens of a database on a MemoryFileSystem, in inline or separated
// mode (first byte). Any disagreement with the oracle, or any error, aborts.
//
// Each op is one byte (the op) followed by its arguments: a key byte (64
// keys) and, for puts, a length byte (values up to ~4 KiB, on both sides of
// the separation threshold of 100 bytes).
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "absl/strings/str_format.h"
#include "core/db_impl.h"
#include "io/memory_file_system.h"
#include "tests/fuzz/fuzz_util.h"

namespace {

using namespace cairn;
using Model = std::map<std::string, std::string>;

std::string Key(uint8_t b) { return absl::StrFormat("k%02d", b % 64); }

std::string Value(uint8_t len_byte, uint32_t salt) {
  const size_t len = len_byte < 128 ? len_byte : 128 + (len_byte - 128) * 30;
  std::string v(len, '\0');
  for (size_t i = 0; i < len; ++i) v[i] = static_cast<char>('a' + (salt + i * 7) % 26);
  return v;
}

std::unique_ptr<DB> OpenOrDie(const Options& o, const std::shared_ptr<io::FileSystem>& fs) {
  auto db = OpenWithFileSystem(o, "/db", fs);
  if (!db.ok()) {
    std::fprintf(stderr, "open: %s\n", db.status().ToString().c_str());
    std::abort();
  }
  return std::move(*db);
}

void CheckScan(DB* db, const Model& model) {
  auto it = db->NewIterator(ReadOptions());
  auto m = model.begin();
  for (it->SeekToFirst(); it->Valid(); it->Next(), ++m) {
    FUZZ_CHECK(m != model.end());
    FUZZ_CHECK(it->key() == m->first);
    FUZZ_CHECK(it->value() == m->second);
  }
  FUZZ_CHECK(it->status().ok());
  FUZZ_CHECK(m == model.end());
}

void CheckSeek(DB* db, const Model& model, const std::string& target) {
  auto it = db->NewIterator(ReadOptions());
  it->Seek(target);
  auto m = model.lower_bound(target);
  for (int i = 0; i < 4; ++i, ++m) {
    if (m == model.end()) {
      FUZZ_CHECK(!it->Valid());
      break;
    }
    FUZZ_CHECK(it->Valid() && it->key() == m->first && it->value() == m->second);
    it->Next();
  }
  it->SeekForPrev(target);
  auto p = model.upper_bound(target);
  if (p == model.begin()) {
    FUZZ_CHECK(!it->Valid());
  } else {
    --p;
    FUZZ_CHECK(it->Valid() && it->key() == p->first);
  }
  FUZZ_CHECK(it->status().ok());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::FuzzInput in(data, size);
  Options o;
  o.memtable_size = 64 << 10;
  o.target_file_size = 64 << 10;
  o.level0_compaction_trigger = 2;
  o.value_separation_threshold = (in.Byte() & 1) ? 100 : kInlineValues;
  auto fs = std::make_shared<io::MemoryFileSystem>();
  auto first = OpenWithFileSystem(o, "/db", fs);
  if (absl::IsUnimplemented(first.status())) {
    o.value_separation_threshold = kInlineValues;  // separation not built yet
    first = OpenWithFileSystem(o, "/db", fs);
  }
  FUZZ_CHECK(first.ok());
  std::unique_ptr<DB> db = std::move(*first);
  Model model;
  for (uint32_t step = 0; !in.empty() && step < 400; ++step) {
    const uint8_t op = in.Byte();
    switch (op % 12) {
      case 0: case 1: case 2: {
        const std::string k = Key(in.Byte());
        const std::string v = Value(in.Byte(), step);
        FUZZ_CHECK(db->Put(WriteOptions{.sync = (op & 0x80) != 0}, k, v).ok());
        model[k] = v;
        break;
      }
      case 3: {
        const std::string k = Key(in.Byte());
        FUZZ_CHECK(db->Delete(WriteOptions(), k).ok());
        model.erase(k);
        break;
      }
      case 4: {
        WriteBatch b;
        Model next = model;
        const int n = 1 + in.Byte() % 8;
        for (int i = 0; i < n; ++i) {
          const std::string k = Key(in.Byte());
          if (in.Byte() % 3 == 0) {
            b.Delete(k);
            next.erase(k);
          } else {
            const std::string v = Value(in.Byte(), step * 8 + i);
            b.Put(k, v);
            next[k] = v;
          }
        }
        FUZZ_CHECK(db->Write(WriteOptions(), b).ok());
        model = std::move(next);
        break;
      }
      case 5: case 6: {
        const std::string k = Key(in.Byte());
        std::string v;
        const absl::Status s = db->Get(ReadOptions(), k, &v);
        auto it = model.find(k);
        if (it == model.end()) {
          FUZZ_CHECK(absl::IsNotFound(s));
        } else {
          FUZZ_CHECK(s.ok() && v == it->second);
        }
        break;
      }
      case 7: CheckScan(db.get(), model); break;
      case 8: CheckSeek(db.get(), model, Key(in.Byte())); break;
      case 9: FUZZ_CHECK(db->Flush().ok()); break;
      case 10:
        if (op & 0x10) FUZZ_CHECK(db->CompactRange(nullptr, nullptr).ok());
        break;
      case 11:
        db.reset();
        db = OpenOrDie(o, fs);
        CheckScan(db.get(), model);
        break;
    }
  }
  CheckScan(db.get(), model);
  return 0;
}
