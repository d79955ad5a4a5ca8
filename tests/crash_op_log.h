// CrashOpLog is the oracle's record of the kill -9 crash test
// (tests/crash_test.cc): the child process (tests/crash_child.cc) appends one
// record per write it is about to make ("intent", with the whole operation)
// and one when the write was acknowledged ("ack"), each with a single
// write(2) to an O_APPEND descriptor. A SIGKILL is a process crash, so the
// kernel keeps every record written; no fsync is needed. The parent reads the
// log back and replays it against a std::map.
//
//   record := checksum:fixed32 (Checksum32 of body) body_len:fixed32 body
//   body   := kind:u8 op_index:fixed64 [op]        kind: 1 intent, 2 ack
//   op     := flags:u8 count:varint32 update*   flags: bit 0 sync, bit 1 ingestion
//   update := type:u8 (0 delete, 1 put, 2 range delete) key:length-prefixed
//             [value_len:varint32 value_seed:fixed64]      (puts only)
//             [end:length-prefixed]                        (range deletes only)
//
// Values are not stored: a value is a pure function of (value_seed, length),
// so both processes derive the same bytes and the log stays small. A put
// whose value_seed is a multiple of 4 is written with an expiry far in the
// future (kCrashTestExpiry, WAL format 6 and table format 3 entries that
// never expire while the test runs), so the oracle reads it like any put.
//
// CrashTestOptions, the options both processes open the database with, live
// here too so that they cannot drift apart.
//
// Thread safety: the functions are pure; a writer is used by one thread.
#ifndef CAIRN_TESTS_CRASH_OP_LOG_H_
#define CAIRN_TESTS_CRASH_OP_LOG_H_

#include <cstdint>
#include <cstdlib>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "cairn/compaction_filter.h"
#include "cairn/options.h"
#include "cairn/write_batch.h"
#include "io/checksum.h"
#include "io/coding.h"

namespace cairn::crash {

// One update of a write: a put (value_len bytes derived from value_seed) or a
// delete.
struct Update {
  std::string key;
  bool is_put = false;
  // Not empty: DeleteRange(key, range_end) (2026-12-07), is_put false.
  std::string range_end;
  uint32_t value_len = 0;
  uint64_t value_seed = 0;
};

// One write (a Put, a Delete or a batch), or one ingestion of a file set
// holding updates (DB::IngestExternalFiles: keys ascending, each once), in
// the order it was issued. Either is all or nothing.
struct LoggedOp {
  uint64_t index = 0;
  bool sync = false;
  bool ingest = false;
  std::vector<Update> updates;
};

using Model = std::map<std::string, std::string>;

// The options both processes open the database with (the child to write,
// the parent to recover and check): tiny memtables, tables and segments, so
// that flushes, compactions, segment rolls and garbage collection (background
// GC is on) happen many times a cycle.
// CAIRN_CRASH_DIRECT_WRITES=1 in the environment (set by the suites for
// their *_direct modes, and so inherited by crash_child) turns on
// Options::direct_writes: the value log appends with O_DIRECT.
inline bool CrashTestDirectWrites() {
  const char* v = std::getenv("CAIRN_CRASH_DIRECT_WRITES");
  return v != nullptr && std::string_view(v) == "1";
}

// CAIRN_CRASH_GC_JOBS=N (set by the suites for their *_2gc modes) runs N
// background GC jobs at once (Options::max_background_gc).
inline int CrashTestGcJobs() {
  const char* v = std::getenv("CAIRN_CRASH_GC_JOBS");
  return v != nullptr && std::string_view(v) == "2" ? 2 : 1;
}

// CAIRN_CRASH_AS_WRITTEN=1 (set by the suites for their
// "separated_as_written" modes) writes every separated value to the value
// log as it comes (Options::separate_at_flush_below = 0); the other modes
// keep the default, where values under 16 KiB go through the WAL to the
// flush except while GC collects.
inline bool CrashTestAsWritten() {
  const char* v = std::getenv("CAIRN_CRASH_AS_WRITTEN");
  return v != nullptr && std::string_view(v) == "1";
}

// 2100-01-01 00:00 UTC: the expiry of the crash test's expiring puts.
inline constexpr uint64_t kCrashTestExpiry = uint64_t{4'102'444'800} * 1'000'000;

// A compaction filter that keeps every entry and reads every eighth value
// it is offered (by the key's last byte), so that compactions run the
// filter's lazy value reads under crashes without changing what the oracle
// expects.
class KeepAllFilter : public CompactionFilter {
 public:
  Decision Filter(const Context&, std::string_view key, Value& value, uint64_t,
                  std::string*) override {
    if (!key.empty() && static_cast<uint8_t>(key.back()) % 8 == 0) value.Read().IgnoreError();
    return Decision::kKeep;
  }
  const char* Name() const override { return "KeepAllFilter"; }
};

inline Options CrashTestOptions(size_t value_separation_threshold) {
  Options options;
  options.compaction_filter = std::make_shared<KeepAllFilter>();
  if (CrashTestAsWritten()) options.separate_at_flush_below = 0;
  options.direct_writes = CrashTestDirectWrites();
  options.max_background_gc = CrashTestGcJobs();
  options.memtable_size = 64 << 10;  // flushes every few dozen writes
  options.target_file_size = 64 << 10;
  options.block_size = 1024;
  options.level0_compaction_trigger = 2;
  options.value_separation_threshold = value_separation_threshold;
  options.value_log_segment_size = 256 << 10;
  return options;
}

// The bytes of a value: deterministic in (seed, len); cheap (splitmix64).
inline std::string MakeValue(uint64_t seed, uint32_t len) {
  std::string v(len, '\0');
  uint64_t x = seed;
  for (uint32_t i = 0; i < len; i += 8) {
    x += 0x9e3779b97f4a7c15ull;
    uint64_t z = x;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    for (uint32_t j = 0; j < 8 && i + j < len; ++j) v[i + j] = static_cast<char>(z >> (8 * j));
  }
  return v;
}

inline void ApplyOp(const LoggedOp& op, Model* m) {
  for (const Update& u : op.updates) {
    if (u.is_put) {
      (*m)[u.key] = MakeValue(u.value_seed, u.value_len);
    } else if (!u.range_end.empty()) {
      m->erase(m->lower_bound(u.key), m->lower_bound(u.range_end));
    } else {
      m->erase(u.key);
    }
  }
}

inline uint32_t RandomValueLength(std::mt19937_64& rng) {
  const int r = static_cast<int>(rng() % 100);
  if (r < 45) return static_cast<uint32_t>(rng() % 100);          // below the threshold
  if (r < 85) return static_cast<uint32_t>(100 + rng() % 1900);   // at or above it
  return static_cast<uint32_t>(2000 + rng() % (20480 - 2000 + 1));  // up to 20 KiB
}

inline Update RandomUpdate(std::mt19937_64& rng, bool allow_delete) {
  Update u;
  u.key = absl::StrFormat("key%05d", static_cast<int>(rng() % 1500));
  u.is_put = !allow_delete || rng() % 4 != 0;
  if (u.is_put) {
    u.value_len = RandomValueLength(rng);
    u.value_seed = rng();
  }
  return u;
}

// The workload both crash suites run: 60% single puts, 17% single deletes,
// 3% range deletes of up to 40 keys, 20% batches of 2-8 puts and deletes; about one write in six is a sync
// write. Values span both sides of a 100-byte separation threshold.
inline LoggedOp RandomOp(std::mt19937_64& rng, uint64_t index) {
  LoggedOp op;
  op.index = index;
  const int r = static_cast<int>(rng() % 100);
  if (r < 60) {
    op.sync = rng() % 8 == 0;
    op.updates.push_back(RandomUpdate(rng, /*allow_delete=*/false));
  } else if (r < 63) {
    op.sync = rng() % 8 == 0;
    Update u;
    const int first = static_cast<int>(rng() % 1500);
    u.key = absl::StrFormat("key%05d", first);
    u.range_end = absl::StrFormat("key%05d", first + 1 + static_cast<int>(rng() % 40));
    op.updates.push_back(std::move(u));
  } else if (r < 80) {
    op.sync = rng() % 8 == 0;
    Update u = RandomUpdate(rng, /*allow_delete=*/false);
    u.is_put = false;
    u.value_len = 0;
    u.value_seed = 0;
    op.updates.push_back(std::move(u));
  } else {
    op.sync = rng() % 4 == 0;
    const int n = 2 + static_cast<int>(rng() % 7);
    for (int i = 0; i < n; ++i) op.updates.push_back(RandomUpdate(rng, /*allow_delete=*/true));
  }
  return op;
}

// An ingestion: 4 to 43 distinct keys in ascending order, a fifth of them
// deletes, values on both sides of the separation threshold.
inline LoggedOp RandomIngestOp(std::mt19937_64& rng, uint64_t index) {
  LoggedOp op;
  op.index = index;
  op.ingest = true;
  std::map<std::string, Update> updates;
  const int n = 4 + static_cast<int>(rng() % 40);
  while (static_cast<int>(updates.size()) < n) {
    Update u = RandomUpdate(rng, /*allow_delete=*/true);
    updates[u.key] = std::move(u);
  }
  for (auto& [key, u] : updates) op.updates.push_back(std::move(u));
  return op;
}

// First difference between two models, for failure messages.
inline std::string DescribeDiff(const Model& got, const Model& want) {
  auto g = got.begin();
  auto w = want.begin();
  while (g != got.end() || w != want.end()) {
    if (w == want.end() || (g != got.end() && g->first < w->first)) {
      return absl::StrCat("unexpected key ", g->first, " (", g->second.size(), " bytes)");
    }
    if (g == got.end() || w->first < g->first) {
      return absl::StrCat("missing key ", w->first, " (", w->second.size(), " bytes)");
    }
    if (g->second != w->second) {
      return absl::StrCat("key ", g->first, ": value of ", g->second.size(),
                          " bytes differs from the expected ", w->second.size(), " bytes");
    }
    ++g;
    ++w;
  }
  return "no difference";
}

// The batch op stands for.
inline WriteBatch MakeBatch(const LoggedOp& op) {
  WriteBatch batch;
  for (const Update& u : op.updates) {
    if (u.is_put && u.value_seed % 4 == 0) {
      batch.PutWithExpiry(u.key, MakeValue(u.value_seed, u.value_len), kCrashTestExpiry);
    } else if (u.is_put) {
      batch.Put(u.key, MakeValue(u.value_seed, u.value_len));
    } else if (!u.range_end.empty()) {
      batch.DeleteRange(u.key, u.range_end);
    } else {
      batch.Delete(u.key);
    }
  }
  return batch;
}

inline constexpr uint8_t kIntentRecord = 1;
inline constexpr uint8_t kAckRecord = 2;

// Frames one record body.
inline std::string FrameRecord(std::string_view body) {
  std::string rec;
  io::PutFixed32(&rec, io::Checksum32(body));
  io::PutFixed32(&rec, static_cast<uint32_t>(body.size()));
  rec.append(body);
  return rec;
}

inline std::string EncodeIntent(const LoggedOp& op) {
  std::string body;
  body.push_back(static_cast<char>(kIntentRecord));
  io::PutFixed64(&body, op.index);
  body.push_back(static_cast<char>((op.sync ? 1 : 0) | (op.ingest ? 2 : 0)));
  io::PutVarint32(&body, static_cast<uint32_t>(op.updates.size()));
  for (const Update& u : op.updates) {
    body.push_back(u.is_put ? 1 : !u.range_end.empty() ? 2 : 0);
    io::PutLengthPrefixed(&body, u.key);
    if (u.is_put) {
      io::PutVarint32(&body, u.value_len);
      io::PutFixed64(&body, u.value_seed);
    }
    if (!u.range_end.empty()) io::PutLengthPrefixed(&body, u.range_end);
  }
  return FrameRecord(body);
}

inline std::string EncodeAck(uint64_t index) {
  std::string body;
  body.push_back(static_cast<char>(kAckRecord));
  io::PutFixed64(&body, index);
  return FrameRecord(body);
}

// What the parent learns from one child's log.
struct ParsedOpLog {
  std::vector<LoggedOp> acknowledged;  // in order
  std::optional<LoggedOp> in_flight;   // issued, never acknowledged
  bool torn_tail = false;              // the last record was cut short
};

// Parses a whole op log. A bad record is tolerated only as the log's last
// bytes (a record the kill interrupted); anything else is DataLoss.
inline absl::StatusOr<ParsedOpLog> ParseOpLog(std::string_view data) {
  ParsedOpLog out;
  std::optional<LoggedOp> pending;
  uint64_t offset = 0;
  while (!data.empty()) {
    std::string_view in = data;
    uint32_t crc = 0, len = 0;
    std::string_view body;
    if (!io::GetFixed32(&in, &crc) || !io::GetFixed32(&in, &len) ||
        !io::GetBytes(&in, len, &body)) {
      // Cut short: only the kill can do that, so it is the last record.
      out.torn_tail = true;
      break;
    }
    if (io::Checksum32(body) != crc) {
      return absl::DataLossError(absl::StrCat("op log: bad checksum at offset ", offset));
    }
    const uint64_t consumed = data.size() - in.size();
    data = in;
    offset += consumed;
    std::string_view b = body;
    if (b.empty()) return absl::DataLossError(absl::StrCat("op log: empty record at ", offset));
    const uint8_t kind = static_cast<uint8_t>(b[0]);
    b.remove_prefix(1);
    uint64_t index = 0;
    if (!io::GetFixed64(&b, &index)) return absl::DataLossError("op log: short record");
    if (kind == kAckRecord) {
      if (!pending.has_value() || pending->index != index) {
        return absl::DataLossError(absl::StrCat("op log: ack of ", index, " without its intent"));
      }
      out.acknowledged.push_back(std::move(*pending));
      pending.reset();
      continue;
    }
    if (kind != kIntentRecord || pending.has_value() || b.empty()) {
      return absl::DataLossError(absl::StrCat("op log: unexpected record at ", offset));
    }
    LoggedOp op;
    op.index = index;
    op.sync = (b[0] & 1) != 0;
    op.ingest = (b[0] & 2) != 0;
    b.remove_prefix(1);
    uint32_t count = 0;
    if (!io::GetVarint32(&b, &count)) return absl::DataLossError("op log: bad count");
    for (uint32_t i = 0; i < count; ++i) {
      Update u;
      std::string_view key;
      if (b.empty()) return absl::DataLossError("op log: short update");
      const uint8_t type = static_cast<uint8_t>(b[0]);
      if (type > 2) return absl::DataLossError("op log: bad update type");
      u.is_put = type == 1;
      b.remove_prefix(1);
      if (!io::GetLengthPrefixed(&b, &key)) return absl::DataLossError("op log: bad key");
      u.key = std::string(key);
      if (u.is_put && (!io::GetVarint32(&b, &u.value_len) || !io::GetFixed64(&b, &u.value_seed))) {
        return absl::DataLossError("op log: bad value");
      }
      std::string_view end;
      if (type == 2) {
        if (!io::GetLengthPrefixed(&b, &end) || end.empty()) {
          return absl::DataLossError("op log: bad range end");
        }
        u.range_end = std::string(end);
      }
      op.updates.push_back(std::move(u));
    }
    pending = std::move(op);
  }
  out.in_flight = std::move(pending);
  return out;
}

}  // namespace cairn::crash

#endif  // CAIRN_TESTS_CRASH_OP_LOG_H_
