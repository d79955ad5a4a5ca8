// The C API (cairn/c.h), second half: iterators and their batch copy,
// snapshots, maintenance, properties and statistics.
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "cairn/c.h"
#include "cairn/db.h"
#include "core/c_api_internal.h"

struct cairn_iterator_t {
  std::unique_ptr<cairn::Iterator> it;
};

using cairn::c_api::Bytes;
using cairn::c_api::CheckBytes;
using cairn::c_api::CheckDb;
using cairn::c_api::CopyOut;
using cairn::c_api::SaveError;

namespace cairn::c_api {
namespace {

// Each entry of cairn_iter_next_batch's buffer starts with two uint32_t.
constexpr size_t kCApiBatchHeader = 2 * sizeof(uint32_t);

// Each entry of cairn_iter_next_key_batch's: a uint32_t and a uint64_t.
constexpr size_t kCApiKeyBatchHeader = sizeof(uint32_t) + sizeof(uint64_t);

bool IterUsable(const cairn_iterator_t* it) { return it != nullptr && it->it != nullptr; }

// cairn_iter_next_batch, or with sizes_only cairn_iter_next_key_batch: each
// entry the key and its value's size (Iterator::value_size, which reads
// nothing under keys_only), not its bytes.
size_t CopyBatch(cairn_iterator_t* it, char* buf, size_t buf_len, size_t max_entries,
                 size_t* bytes_used, char** errptr, bool sizes_only) {
  size_t used = 0, count = 0;
  if (bytes_used != nullptr) *bytes_used = 0;
  if (!IterUsable(it)) {
    SaveError(absl::InvalidArgumentError("iterator is NULL"), errptr);
    return 0;
  }
  if (!SaveError(CheckBytes(buf, buf_len, "buf"), errptr)) return 0;
  while (count < max_entries && it->it->Valid()) {
    const std::string_view k = it->it->key();
    std::string_view v;
    uint64_t size = 0;
    if (sizes_only) {
      size = it->it->value_size();
    } else {
      v = it->it->value();
    }
    if (!it->it->Valid()) break;  // keys_only: the on-demand read (or the pointer) failed
    const size_t need =
        (sizes_only ? kCApiKeyBatchHeader : kCApiBatchHeader) + k.size() + v.size();
    if (need > buf_len - used) {
      // The first entry alone: tell the caller how large a buffer to bring.
      if (count == 0 && bytes_used != nullptr) *bytes_used = need;
      return count;
    }
    const uint32_t key_len = static_cast<uint32_t>(k.size());
    std::memcpy(buf + used, &key_len, sizeof(key_len));
    used += sizeof(key_len);
    if (sizes_only) {
      std::memcpy(buf + used, &size, sizeof(size));
      used += sizeof(size);
    } else {
      const uint32_t value_len = static_cast<uint32_t>(v.size());
      std::memcpy(buf + used, &value_len, sizeof(value_len));
      used += sizeof(value_len);
    }
    if (!k.empty()) std::memcpy(buf + used, k.data(), k.size());
    used += k.size();
    if (!v.empty()) std::memcpy(buf + used, v.data(), v.size());
    used += v.size();
    ++count;
    if (bytes_used != nullptr) *bytes_used = used;
    it->it->Next();
  }
  // Entries already copied are the caller's; an error that ended the run
  // is reported with them, and again by cairn_iter_get_error.
  if (!it->it->Valid()) SaveError(it->it->status(), errptr);
  return count;
}

}  // namespace
}  // namespace cairn::c_api

extern "C" {

// ---- Iterators ----

cairn_iterator_t* cairn_create_iterator(cairn_t* db, const cairn_readoptions_t* options,
                                        char** errptr) {
  if (!SaveError(CheckDb(db), errptr)) return nullptr;
  // The bounds are copied by NewIterator, so the views may die with the call.
  std::string_view lo, hi;
  auto it = db->db->NewIterator(cairn::c_api::ToReadOptions(options, &lo, &hi));
  if (it == nullptr) {
    SaveError(absl::InternalError("NewIterator returned no iterator"), errptr);
    return nullptr;
  }
  auto* out = new cairn_iterator_t;
  out->it = std::move(it);
  return out;
}

void cairn_iter_destroy(cairn_iterator_t* it) { delete it; }

unsigned char cairn_iter_valid(const cairn_iterator_t* it) {
  return cairn::c_api::IterUsable(it) && it->it->Valid();
}

void cairn_iter_seek_to_first(cairn_iterator_t* it) {
  if (cairn::c_api::IterUsable(it)) it->it->SeekToFirst();
}
void cairn_iter_seek_to_last(cairn_iterator_t* it) {
  if (cairn::c_api::IterUsable(it)) it->it->SeekToLast();
}
// A NULL key with a length seeks nowhere: the iterator is left as it was.
void cairn_iter_seek(cairn_iterator_t* it, const char* key, size_t keylen) {
  if (cairn::c_api::IterUsable(it) && CheckBytes(key, keylen, "key").ok()) {
    it->it->Seek(Bytes(key, keylen));
  }
}
void cairn_iter_seek_for_prev(cairn_iterator_t* it, const char* key, size_t keylen) {
  if (cairn::c_api::IterUsable(it) && CheckBytes(key, keylen, "key").ok()) {
    it->it->SeekForPrev(Bytes(key, keylen));
  }
}
// The C++ iterator requires Valid() before Next and Prev; C callers get a
// no-op instead of undefined behaviour.
void cairn_iter_next(cairn_iterator_t* it) {
  if (cairn_iter_valid(it)) it->it->Next();
}
void cairn_iter_prev(cairn_iterator_t* it) {
  if (cairn_iter_valid(it)) it->it->Prev();
}

const char* cairn_iter_key(const cairn_iterator_t* it, size_t* klen) {
  if (!cairn_iter_valid(it)) {
    if (klen != nullptr) *klen = 0;
    return nullptr;
  }
  const std::string_view k = it->it->key();
  if (klen != nullptr) *klen = k.size();
  return k.data();
}

const char* cairn_iter_value(const cairn_iterator_t* it, size_t* vlen) {
  if (!cairn_iter_valid(it)) {
    if (vlen != nullptr) *vlen = 0;
    return nullptr;
  }
  const std::string_view v = it->it->value();
  if (!it->it->Valid()) {  // keys_only: the on-demand read failed
    if (vlen != nullptr) *vlen = 0;
    return nullptr;
  }
  if (vlen != nullptr) *vlen = v.size();
  return v.data();
}
uint64_t cairn_iter_value_size(const cairn_iterator_t* it) {
  if (!cairn_iter_valid(it)) return 0;
  const uint64_t size = it->it->value_size();
  return it->it->Valid() ? size : 0;
}

void cairn_iter_get_error(const cairn_iterator_t* it, char** errptr) {
  if (!cairn::c_api::IterUsable(it)) {
    SaveError(absl::InvalidArgumentError("iterator is NULL"), errptr);
    return;
  }
  SaveError(it->it->status(), errptr);
}

size_t cairn_iter_next_batch(cairn_iterator_t* it, char* buf, size_t buf_len, size_t max_entries,
                             size_t* bytes_used, char** errptr) {
  return cairn::c_api::CopyBatch(it, buf, buf_len, max_entries, bytes_used, errptr,
                                 /*sizes_only=*/false);
}

size_t cairn_iter_next_key_batch(cairn_iterator_t* it, char* buf, size_t buf_len,
                                 size_t max_entries, size_t* bytes_used, char** errptr) {
  return cairn::c_api::CopyBatch(it, buf, buf_len, max_entries, bytes_used, errptr,
                                 /*sizes_only=*/true);
}

// ---- Snapshots ----

const cairn_snapshot_t* cairn_create_snapshot(cairn_t* db) {
  if (!CheckDb(db).ok()) return nullptr;
  return reinterpret_cast<const cairn_snapshot_t*>(db->db->GetSnapshot());
}

// After cairn_close the DB frees its snapshots itself when released.
void cairn_release_snapshot(cairn_t* db, const cairn_snapshot_t* snapshot) {
  if (!CheckDb(db).ok() || snapshot == nullptr) return;
  db->db->ReleaseSnapshot(reinterpret_cast<const cairn::Snapshot*>(snapshot));
}

// ---- Maintenance ----

void cairn_flush(cairn_t* db, char** errptr) {
  if (SaveError(CheckDb(db), errptr)) SaveError(db->db->Flush(), errptr);
}

void cairn_sync_wal(cairn_t* db, char** errptr) {
  if (SaveError(CheckDb(db), errptr)) SaveError(db->db->SyncWAL(), errptr);
}

void cairn_compact_range(cairn_t* db, const char* begin, size_t beginlen, const char* end,
                         size_t endlen, char** errptr) {
  if (!SaveError(CheckDb(db), errptr)) return;
  std::string b, e;
  if (begin != nullptr) b.assign(begin, beginlen);
  if (end != nullptr) e.assign(end, endlen);
  SaveError(db->db->CompactRange(begin != nullptr ? &b : nullptr, end != nullptr ? &e : nullptr),
            errptr);
}

void cairn_wait_for_background_work(cairn_t* db, char** errptr) {
  if (SaveError(CheckDb(db), errptr)) SaveError(db->db->WaitForBackgroundWork(), errptr);
}

void cairn_run_gc(cairn_t* db, cairn_gc_result_t* result, char** errptr) {
  if (result != nullptr) *result = cairn_gc_result_t{};
  if (!SaveError(CheckDb(db), errptr)) return;
  auto r = db->db->RunGC();
  if (!SaveError(r.status(), errptr) || result == nullptr) return;
  *result = cairn_gc_result_t{
      r->victims,           r->segments_freed,  r->bytes_read,    r->bytes_relocated,
      r->records_relocated, r->records_dropped, r->rewrites_lost, r->micros};
}

void cairn_checkpoint(cairn_t* db, const char* dir, cairn_checkpoint_result_t* result,
                      char** errptr) {
  if (result != nullptr) *result = cairn_checkpoint_result_t{};
  if (!SaveError(CheckDb(db), errptr)) return;
  if (dir == nullptr) {
    SaveError(absl::InvalidArgumentError("dir is NULL"), errptr);
    return;
  }
  auto r = db->db->CreateCheckpoint(dir);
  if (!SaveError(r.status(), errptr) || result == nullptr) return;
  *result = cairn_checkpoint_result_t{r->files_linked, r->bytes_linked, r->files_copied,
                                      r->bytes_copied, r->sequence,     r->micros};
}

// ---- Properties and statistics ----

// ---- Size estimates ----

void cairn_approximate_sizes(cairn_t* db, int num_ranges, const char* const* start_keys,
                             const size_t* start_lens, const char* const* limit_keys,
                             const size_t* limit_lens, uint32_t flags, uint64_t* sizes,
                             char** errptr) {
  if (!SaveError(CheckDb(db), errptr)) return;
  if (num_ranges > 0 && (start_keys == nullptr || start_lens == nullptr ||
                         limit_keys == nullptr || limit_lens == nullptr || sizes == nullptr)) {
    SaveError(absl::InvalidArgumentError(
                  "cairn_approximate_sizes: a key, length or sizes array is NULL"),
              errptr);
    return;
  }
  std::vector<cairn::Range> ranges(num_ranges > 0 ? num_ranges : 0);
  for (int i = 0; i < num_ranges; ++i) {
    if (!SaveError(CheckBytes(start_keys[i], start_lens[i], "start key"), errptr) ||
        !SaveError(CheckBytes(limit_keys[i], limit_lens[i], "limit key"), errptr)) {
      return;
    }
    ranges[i] = {Bytes(start_keys[i], start_lens[i]), Bytes(limit_keys[i], limit_lens[i])};
  }
  SaveError(db->db->GetApproximateSizes(ranges.data(), num_ranges, sizes, flags), errptr);
}

uint64_t cairn_approximate_key_count(cairn_t* db, const char* start, size_t startlen,
                                     const char* limit, size_t limitlen, uint32_t flags,
                                     char** errptr) {
  if (!SaveError(CheckDb(db), errptr) || !SaveError(CheckBytes(start, startlen, "start"), errptr) ||
      !SaveError(CheckBytes(limit, limitlen, "limit"), errptr)) {
    return 0;
  }
  absl::StatusOr<uint64_t> n =
      db->db->GetApproximateKeyCount({Bytes(start, startlen), Bytes(limit, limitlen)}, flags);
  if (!SaveError(n.status(), errptr)) return 0;
  return *n;
}

char* cairn_property_value(cairn_t* db, const char* name) {
  if (!CheckDb(db).ok() || name == nullptr) return nullptr;
  std::string value;
  if (!db->db->GetProperty(name, &value)) return nullptr;
  return CopyOut(value);
}

void cairn_get_stats(cairn_t* db, cairn_stats_t* stats, size_t size, char** errptr) {
  if (!SaveError(CheckDb(db), errptr)) return;
  if (stats == nullptr) {
    SaveError(absl::InvalidArgumentError("stats is NULL"), errptr);
    return;
  }
  const cairn::Stats s = db->db->GetStats();
  cairn_stats_t out{};
#define CAIRN_C_STAT_(name) out.name = s.name;
  CAIRN_C_STAT_(user_bytes_written)
  CAIRN_C_STAT_(puts) CAIRN_C_STAT_(deletes) CAIRN_C_STAT_(gets) CAIRN_C_STAT_(gets_found) CAIRN_C_STAT_(
      wal_bytes_written) CAIRN_C_STAT_(wal_bytes_prefilled) CAIRN_C_STAT_(vlog_bytes_written)
      CAIRN_C_STAT_(flush_bytes_written) CAIRN_C_STAT_(compaction_bytes_written) CAIRN_C_STAT_(
          gc_bytes_written) CAIRN_C_STAT_(manifest_bytes_written) CAIRN_C_STAT_(write_amplification)
          CAIRN_C_STAT_(table_reads) CAIRN_C_STAT_(table_bytes_read) CAIRN_C_STAT_(vlog_reads) CAIRN_C_STAT_(
              vlog_bytes_read) CAIRN_C_STAT_(read_amplification) CAIRN_C_STAT_(bloom_probes)
              CAIRN_C_STAT_(bloom_rejections) CAIRN_C_STAT_(bloom_false_positives) CAIRN_C_STAT_(
                  block_cache_hits) CAIRN_C_STAT_(block_cache_misses) CAIRN_C_STAT_(value_cache_hits)
                  CAIRN_C_STAT_(value_cache_misses) CAIRN_C_STAT_(block_cache_bytes) CAIRN_C_STAT_(
                      block_cache_capacity) CAIRN_C_STAT_(value_cache_bytes) CAIRN_C_STAT_(value_cache_capacity)
                      CAIRN_C_STAT_(cache_shared) CAIRN_C_STAT_(disk_bytes) CAIRN_C_STAT_(
                          sst_bytes) CAIRN_C_STAT_(vlog_bytes) CAIRN_C_STAT_(vlog_segments)
                          CAIRN_C_STAT_(vlog_garbage_bytes) CAIRN_C_STAT_(vlog_punched_bytes) CAIRN_C_STAT_(
                              vlog_foreseen_garbage_bytes) CAIRN_C_STAT_(live_user_bytes_estimate)
                              CAIRN_C_STAT_(space_amplification) CAIRN_C_STAT_(stall_slowdowns) CAIRN_C_STAT_(
                                  stall_stops) CAIRN_C_STAT_(stall_micros) CAIRN_C_STAT_(stall_max_micros)
                                  CAIRN_C_STAT_(stall_max_delay_micros) CAIRN_C_STAT_(
                                      delayed_write_rate) CAIRN_C_STAT_(pending_compaction_bytes)
                                      CAIRN_C_STAT_(gc_runs) CAIRN_C_STAT_(gc_segments_freed) CAIRN_C_STAT_(
                                          gc_bytes_read) CAIRN_C_STAT_(gc_bytes_relocated)
                                          CAIRN_C_STAT_(gc_records_dropped) CAIRN_C_STAT_(
                                              gc_records_known_dead) CAIRN_C_STAT_(gc_punched_runs)
                                              CAIRN_C_STAT_(gc_punched_bytes) CAIRN_C_STAT_(
                                                  gc_punch_calls) CAIRN_C_STAT_(gc_punch_skipped_linked)
                                                  CAIRN_C_STAT_(gc_punch_held_for_readers) CAIRN_C_STAT_(
                                                      gc_micros) CAIRN_C_STAT_(gc_scan_micros)
                                                      CAIRN_C_STAT_(gc_liveness_micros) CAIRN_C_STAT_(
                                                          gc_write_micros) CAIRN_C_STAT_(gc_rewrite_micros)
                                                          CAIRN_C_STAT_(gc_throttled_micros) CAIRN_C_STAT_(
                                                              gc_rewrite_rechecks) CAIRN_C_STAT_(gc_victims_waited)
                                                              CAIRN_C_STAT_(gc_victim_syncs) CAIRN_C_STAT_(
                                                                  gc_victim_switches)
                                                                  CAIRN_C_STAT_(
                                                                      gc_victim_bytes_waiting)
                                                                      CAIRN_C_STAT_(gc_active_seals)
                                                                          CAIRN_C_STAT_(
                                                                              gc_relocated_per_user_byte)
                                                                              CAIRN_C_STAT_(
                                                                                  gc_recounted_bytes)
                                                                                  CAIRN_C_STAT_(
                                                                                      vlog_space_amplification)
                                                                                      CAIRN_C_STAT_(
                                                                                          gc_space_amplification)
#undef CAIRN_C_STAT_
      // A caller built against an older, shorter struct gets its prefix.
      std::memcpy(stats, &out, std::min(size, sizeof(out)));
}

}  // extern "C"
