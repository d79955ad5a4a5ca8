// The C API (cairn/c.h), first half: errors, options, open and close,
// writes and reads. Iterators, snapshots, maintenance and statistics are in
// c_api_iter.cc.
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "cairn/c.h"
#include "cairn/db.h"
#include "cairn/repair.h"
#include "core/c_api_internal.h"

namespace cairn::c_api {

namespace {

// Indexed by absl::StatusCode: the names messages start with, as RocksDB's
// C API spells its codes ("NotFound: ...").
constexpr const char* kCApiCodeNames[] = {
    "OK",       "Cancelled",      "Unknown",          "InvalidArgument",   "DeadlineExceeded",
    "NotFound", "AlreadyExists",  "PermissionDenied", "ResourceExhausted", "FailedPrecondition",
    "Aborted",  "OutOfRange",     "Unimplemented",    "Internal",          "Unavailable",
    "DataLoss", "Unauthenticated"};
constexpr int kCApiCodeCount = sizeof(kCApiCodeNames) / sizeof(kCApiCodeNames[0]);

absl::Status CApiNullHandle(const char* what) {
  return absl::InvalidArgumentError(absl::StrCat(what, " is NULL"));
}

}  // namespace

bool SaveError(const absl::Status& status, char** errptr) {
  if (status.ok()) return true;
  if (errptr == nullptr) return false;
  std::free(*errptr);
  const int code = static_cast<int>(status.code());
  const char* name = code >= 0 && code < kCApiCodeCount ? kCApiCodeNames[code] : "Unknown";
  const std::string text = absl::StrCat(name, ": ", status.message());
  *errptr = static_cast<char*>(std::malloc(text.size() + 1));
  if (*errptr != nullptr) std::memcpy(*errptr, text.c_str(), text.size() + 1);
  return false;
}

char* CopyOut(std::string_view bytes) {
  char* out = static_cast<char*>(std::malloc(bytes.size() + 1));
  if (out == nullptr) return nullptr;
  if (!bytes.empty()) std::memcpy(out, bytes.data(), bytes.size());
  out[bytes.size()] = '\0';  // so that a text value may be read as a C string
  return out;
}

absl::Status CheckDb(const cairn_t* db) {
  if (db == nullptr || db->db == nullptr) return CApiNullHandle("db");
  if (db->closed) return absl::FailedPreconditionError("closed: the DB was closed by cairn_close");
  return absl::OkStatus();
}

absl::Status CheckBytes(const char* ptr, size_t len, const char* what) {
  if (ptr == nullptr && len != 0) {
    return absl::InvalidArgumentError(absl::StrCat(what, " is NULL with length ", len));
  }
  return absl::OkStatus();
}

cairn::ReadOptions ToReadOptions(const cairn_readoptions_t* options,
                                 std::string_view* lower_storage, std::string_view* upper_storage) {
  if (options == nullptr) return cairn::ReadOptions();
  cairn::ReadOptions ro = options->options;
  ro.iterate_lower_bound = nullptr;
  ro.iterate_upper_bound = nullptr;
  if (options->has_lower) {
    *lower_storage = options->lower;
    ro.iterate_lower_bound = lower_storage;
  }
  if (options->has_upper) {
    *upper_storage = options->upper;
    ro.iterate_upper_bound = upper_storage;
  }
  return ro;
}

namespace {

absl::Status ToOptions(const cairn_options_t* in, cairn::Options* out) {
  if (in == nullptr) return CApiNullHandle("options");
  if (in->compression < 0 || in->compression > 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("compression must be 0 (none) or 1 (zstd), not ", in->compression));
  }
  if (in->io_backend < 0 || in->io_backend > 2) {
    return absl::InvalidArgumentError(
        absl::StrCat("io_backend must be 0, 1 or 2, not ", in->io_backend));
  }
  *out = in->options;
  out->compression = static_cast<cairn::Compression>(in->compression);
  out->io_backend = static_cast<cairn::IoBackendOption>(in->io_backend);
  return absl::OkStatus();
}

absl::Status CheckPath(const char* path) {
  if (path == nullptr) return CApiNullHandle("path");
  return absl::OkStatus();
}

cairn::WriteOptions ToWriteOptions(const cairn_writeoptions_t* options) {
  return options == nullptr ? cairn::WriteOptions() : options->options;
}

cairn_t* OpenWith(bool read_only, const cairn_options_t* options, const char* path, char** errptr) {
  cairn::Options opts;
  if (!SaveError(ToOptions(options, &opts), errptr) || !SaveError(CheckPath(path), errptr)) {
    return nullptr;
  }
  auto db = read_only ? cairn::DB::OpenForReadOnly(opts, path) : cairn::DB::Open(opts, path);
  if (!SaveError(db.status(), errptr)) return nullptr;
  auto* handle = new cairn_t;
  handle->db = std::move(*db);
  return handle;
}

// A NULL key or value with a length has no errptr to report to: it is
// refused as an oversize key would be, through the batch's own size check
// (WriteBatch::status, which cairn_write returns), so the batch as a whole
// is refused. Putting an empty key in its place would apply a write the
// caller did not ask for.
void PoisonBatch(cairn_writebatch_t* batch) {
  static const std::string* const kOversizeKey = new std::string(cairn::kMaxKeySize + 1, 'x');
  batch->batch.Delete(*kOversizeKey);
}
}  // namespace
}  // namespace cairn::c_api

using cairn::c_api::Bytes;
using cairn::c_api::CheckBytes;
using cairn::c_api::CheckDb;
using cairn::c_api::CopyOut;
using cairn::c_api::SaveError;

extern "C" {

cairn_code cairn_error_code(const char* err) {
  if (err == nullptr) return CAIRN_OK;
  for (int code = 1; code < cairn::c_api::kCApiCodeCount; ++code) {
    const char* name = cairn::c_api::kCApiCodeNames[code];
    const size_t n = std::strlen(name);
    if (std::strncmp(err, name, n) == 0 && err[n] == ':') return static_cast<cairn_code>(code);
  }
  return CAIRN_UNKNOWN;
}

const char* cairn_code_name(cairn_code code) {
  const int c = static_cast<int>(code);
  return c >= 0 && c < cairn::c_api::kCApiCodeCount ? cairn::c_api::kCApiCodeNames[c] : "Unknown";
}

void cairn_free(void* ptr) { std::free(ptr); }

const char* cairn_version(void) { return CAIRN_VERSION_STRING; }
int cairn_version_number(void) { return CAIRN_VERSION_NUMBER; }

// ---- Options ----

cairn_options_t* cairn_options_create(void) { return new cairn_options_t; }
void cairn_options_destroy(cairn_options_t* options) { delete options; }

// A NULL handle makes a setter do nothing and a getter return 0: neither has
// an errptr, and cairn_open reports the NULL options.
#define CAIRN_C_OPTION_FIELD_(type, name)                                                        \
  void cairn_options_set_##name(cairn_options_t* options, type value) {                          \
    if (options != nullptr) options->options.name = value;                                       \
  }                                                                                              \
  type cairn_options_get_##name(const cairn_options_t* options) {                                \
    return options == nullptr ? static_cast<type>(0) : static_cast<type>(options->options.name); \
  }
CAIRN_C_OPTION_FIELD_(unsigned char, create_if_missing)
CAIRN_C_OPTION_FIELD_(unsigned char, error_if_exists)
CAIRN_C_OPTION_FIELD_(size_t, memtable_size)
CAIRN_C_OPTION_FIELD_(uint64_t, max_memtable_value_bytes)
CAIRN_C_OPTION_FIELD_(size_t, block_size)
CAIRN_C_OPTION_FIELD_(size_t, cache_size)
CAIRN_C_OPTION_FIELD_(size_t, block_cache_size)
CAIRN_C_OPTION_FIELD_(unsigned char, cache_new_table_blocks)
CAIRN_C_OPTION_FIELD_(int, bloom_bits_per_key)
CAIRN_C_OPTION_FIELD_(unsigned char, direct_reads)
CAIRN_C_OPTION_FIELD_(unsigned char, direct_writes)
CAIRN_C_OPTION_FIELD_(uint64_t, value_log_bytes_per_sync)
CAIRN_C_OPTION_FIELD_(uint64_t, wal_bytes_per_sync)
CAIRN_C_OPTION_FIELD_(uint64_t, wal_prefill_bytes)
CAIRN_C_OPTION_FIELD_(uint64_t, wal_ttl_seconds)
CAIRN_C_OPTION_FIELD_(uint64_t, wal_size_limit_bytes)
CAIRN_C_OPTION_FIELD_(size_t, value_separation_threshold)
CAIRN_C_OPTION_FIELD_(size_t, separate_at_flush_below)
CAIRN_C_OPTION_FIELD_(unsigned char, separate_at_flush_during_gc)
CAIRN_C_OPTION_FIELD_(uint64_t, value_log_segment_size)
CAIRN_C_OPTION_FIELD_(size_t, value_cache_size)
CAIRN_C_OPTION_FIELD_(size_t, target_file_size)
CAIRN_C_OPTION_FIELD_(int, level_size_multiplier)
CAIRN_C_OPTION_FIELD_(uint64_t, soft_pending_compaction_bytes_limit)
CAIRN_C_OPTION_FIELD_(uint64_t, hard_pending_compaction_bytes_limit)
CAIRN_C_OPTION_FIELD_(double, gc_min_garbage_ratio)
CAIRN_C_OPTION_FIELD_(double, gc_space_amp_trigger)
CAIRN_C_OPTION_FIELD_(uint64_t, gc_bytes_per_sec)
CAIRN_C_OPTION_FIELD_(unsigned char, gc_punch_holes)
CAIRN_C_OPTION_FIELD_(int, max_background_gc)
CAIRN_C_OPTION_FIELD_(int, gc_nice_adjustment)
CAIRN_C_OPTION_FIELD_(int, max_background_compactions)
CAIRN_C_OPTION_FIELD_(int, max_subcompactions)
CAIRN_C_OPTION_FIELD_(uint64_t, compaction_readahead_size)
CAIRN_C_OPTION_FIELD_(uint64_t, max_info_log_size)
CAIRN_C_OPTION_FIELD_(uint32_t, stats_dump_period_sec)
#undef CAIRN_C_OPTION_FIELD_

void cairn_options_set_compression(cairn_options_t* options, int value) {
  if (options != nullptr) options->compression = value;
}
int cairn_options_get_compression(const cairn_options_t* options) {
  return options == nullptr ? 0 : options->compression;
}
void cairn_options_set_io_backend(cairn_options_t* options, int value) {
  if (options != nullptr) options->io_backend = value;
}
int cairn_options_get_io_backend(const cairn_options_t* options) {
  return options == nullptr ? 0 : options->io_backend;
}

// ---- ReadOptions and WriteOptions ----

cairn_readoptions_t* cairn_readoptions_create(void) { return new cairn_readoptions_t; }
void cairn_readoptions_destroy(cairn_readoptions_t* options) { delete options; }

void cairn_readoptions_set_snapshot(cairn_readoptions_t* options, const cairn_snapshot_t* snap) {
  if (options != nullptr) {
    options->options.snapshot = reinterpret_cast<const cairn::Snapshot*>(snap);
  }
}

#define CAIRN_C_READ_OPTION_(type, name)                                                         \
  void cairn_readoptions_set_##name(cairn_readoptions_t* options, type v) {                      \
    if (options != nullptr) options->options.name = v;                                           \
  }                                                                                              \
  type cairn_readoptions_get_##name(const cairn_readoptions_t* options) {                        \
    return options == nullptr ? static_cast<type>(0) : static_cast<type>(options->options.name); \
  }
CAIRN_C_READ_OPTION_(unsigned char, verify_checksums)
CAIRN_C_READ_OPTION_(unsigned char, fill_cache)
CAIRN_C_READ_OPTION_(int, value_prefetch_depth)
CAIRN_C_READ_OPTION_(size_t, value_prefetch_bytes)
CAIRN_C_READ_OPTION_(size_t, readahead_size)
CAIRN_C_READ_OPTION_(unsigned char, keys_only)
#undef CAIRN_C_READ_OPTION_

void cairn_readoptions_set_iterate_lower_bound(cairn_readoptions_t* options, const char* key,
                                               size_t keylen) {
  if (options == nullptr) return;
  options->has_lower = key != nullptr;
  options->lower.assign(Bytes(key, keylen));
}
void cairn_readoptions_set_iterate_upper_bound(cairn_readoptions_t* options, const char* key,
                                               size_t keylen) {
  if (options == nullptr) return;
  options->has_upper = key != nullptr;
  options->upper.assign(Bytes(key, keylen));
}

cairn_writeoptions_t* cairn_writeoptions_create(void) { return new cairn_writeoptions_t; }
void cairn_writeoptions_destroy(cairn_writeoptions_t* options) { delete options; }
void cairn_writeoptions_set_sync(cairn_writeoptions_t* options, unsigned char v) {
  if (options != nullptr) options->options.sync = v != 0;
}
unsigned char cairn_writeoptions_get_sync(const cairn_writeoptions_t* options) {
  return options != nullptr && options->options.sync;
}

// ---- Open, close, destroy, repair ----

cairn_t* cairn_open(const cairn_options_t* options, const char* path, char** errptr) {
  return cairn::c_api::OpenWith(false, options, path, errptr);
}
cairn_t* cairn_open_for_read_only(const cairn_options_t* options, const char* path, char** errptr) {
  return cairn::c_api::OpenWith(true, options, path, errptr);
}

void cairn_close(cairn_t* db, char** errptr) {
  if (!SaveError(CheckDb(db), errptr)) return;
  db->closed = true;
  SaveError(db->db->Close(), errptr);
}

void cairn_release(cairn_t* db) { delete db; }

void cairn_destroy_db(const cairn_options_t* options, const char* path, char** errptr) {
  cairn::Options opts;
  if (!SaveError(cairn::c_api::ToOptions(options, &opts), errptr) ||
      !SaveError(cairn::c_api::CheckPath(path), errptr)) {
    return;
  }
  SaveError(cairn::DestroyDB(opts, path), errptr);
}

void cairn_repair_db(const cairn_options_t* options, const char* path, char** report,
                     char** errptr) {
  cairn::Options opts;
  if (!SaveError(cairn::c_api::ToOptions(options, &opts), errptr) ||
      !SaveError(cairn::c_api::CheckPath(path), errptr)) {
    return;
  }
  cairn::RepairReport r;
  const absl::Status s = cairn::RepairDB(opts, path, &r);
  if (report != nullptr && !r.report_path.empty()) *report = CopyOut(r.ToString());
  SaveError(s, errptr);
}

// ---- Writes ----

void cairn_put(cairn_t* db, const cairn_writeoptions_t* options, const char* key, size_t keylen,
               const char* val, size_t vallen, char** errptr) {
  if (!SaveError(CheckDb(db), errptr) || !SaveError(CheckBytes(key, keylen, "key"), errptr) ||
      !SaveError(CheckBytes(val, vallen, "value"), errptr)) {
    return;
  }
  SaveError(
      db->db->Put(cairn::c_api::ToWriteOptions(options), Bytes(key, keylen), Bytes(val, vallen)),
      errptr);
}

void cairn_put_with_ttl(cairn_t* db, const cairn_writeoptions_t* options, const char* key,
                        size_t keylen, const char* val, size_t vallen, uint64_t ttl_seconds,
                        char** errptr) {
  if (!SaveError(CheckDb(db), errptr) || !SaveError(CheckBytes(key, keylen, "key"), errptr) ||
      !SaveError(CheckBytes(val, vallen, "value"), errptr)) {
    return;
  }
  SaveError(db->db->PutWithTTL(cairn::c_api::ToWriteOptions(options), Bytes(key, keylen),
                               Bytes(val, vallen), ttl_seconds),
            errptr);
}

void cairn_delete(cairn_t* db, const cairn_writeoptions_t* options, const char* key, size_t keylen,
                  char** errptr) {
  if (!SaveError(CheckDb(db), errptr) || !SaveError(CheckBytes(key, keylen, "key"), errptr)) {
    return;
  }
  SaveError(db->db->Delete(cairn::c_api::ToWriteOptions(options), Bytes(key, keylen)), errptr);
}

void cairn_delete_range(cairn_t* db, const cairn_writeoptions_t* options, const char* begin,
                        size_t beginlen, const char* end, size_t endlen, char** errptr) {
  if (!SaveError(CheckDb(db), errptr) || !SaveError(CheckBytes(begin, beginlen, "begin"), errptr) ||
      !SaveError(CheckBytes(end, endlen, "end"), errptr)) {
    return;
  }
  SaveError(db->db->DeleteRange(cairn::c_api::ToWriteOptions(options), Bytes(begin, beginlen),
                                Bytes(end, endlen)),
            errptr);
}

cairn_writebatch_t* cairn_writebatch_create(void) { return new cairn_writebatch_t; }
void cairn_writebatch_destroy(cairn_writebatch_t* batch) { delete batch; }

void cairn_writebatch_put(cairn_writebatch_t* batch, const char* key, size_t keylen,
                          const char* val, size_t vallen) {
  if (batch == nullptr) return;
  if ((key == nullptr && keylen != 0) || (val == nullptr && vallen != 0)) {
    cairn::c_api::PoisonBatch(batch);
    return;
  }
  batch->batch.Put(Bytes(key, keylen), Bytes(val, vallen));
}

void cairn_writebatch_delete(cairn_writebatch_t* batch, const char* key, size_t keylen) {
  if (batch == nullptr) return;
  if (key == nullptr && keylen != 0) {
    cairn::c_api::PoisonBatch(batch);
    return;
  }
  batch->batch.Delete(Bytes(key, keylen));
}

void cairn_writebatch_delete_range(cairn_writebatch_t* batch, const char* begin, size_t beginlen,
                                   const char* end, size_t endlen) {
  if (batch == nullptr) return;
  if ((begin == nullptr && beginlen != 0) || (end == nullptr && endlen != 0)) {
    cairn::c_api::PoisonBatch(batch);
    return;
  }
  batch->batch.DeleteRange(Bytes(begin, beginlen), Bytes(end, endlen));
}

void cairn_writebatch_clear(cairn_writebatch_t* batch) {
  if (batch != nullptr) batch->batch.Clear();
}

void cairn_writebatch_reserve(cairn_writebatch_t* batch, size_t bytes) {
  if (batch != nullptr) batch->batch.Reserve(bytes);
}

uint32_t cairn_writebatch_count(const cairn_writebatch_t* batch) {
  return batch == nullptr ? 0 : batch->batch.Count();
}

void cairn_write(cairn_t* db, const cairn_writeoptions_t* options, cairn_writebatch_t* batch,
                 char** errptr) {
  if (!SaveError(CheckDb(db), errptr)) return;
  if (batch == nullptr) {
    SaveError(absl::InvalidArgumentError("batch is NULL"), errptr);
    return;
  }
  SaveError(db->db->Write(cairn::c_api::ToWriteOptions(options), batch->batch), errptr);
}

// ---- Reads ----

char* cairn_get(cairn_t* db, const cairn_readoptions_t* options, const char* key, size_t keylen,
                size_t* vallen, char** errptr) {
  if (vallen != nullptr) *vallen = 0;
  if (!SaveError(CheckDb(db), errptr) || !SaveError(CheckBytes(key, keylen, "key"), errptr)) {
    return nullptr;
  }
  std::string_view lo, hi;
  std::string value;
  if (!SaveError(
          db->db->Get(cairn::c_api::ToReadOptions(options, &lo, &hi), Bytes(key, keylen), &value),
          errptr)) {
    return nullptr;
  }
  if (vallen != nullptr) *vallen = value.size();
  return CopyOut(value);
}

size_t cairn_get_into(cairn_t* db, const cairn_readoptions_t* options, const char* key,
                      size_t keylen, char* buf, size_t buflen, char** errptr) {
  if (!SaveError(CheckDb(db), errptr) || !SaveError(CheckBytes(key, keylen, "key"), errptr) ||
      !SaveError(CheckBytes(buf, buflen, "buf"), errptr)) {
    return 0;
  }
  std::string_view lo, hi;
  cairn::PinnableValue value;
  if (!SaveError(
          db->db->Get(cairn::c_api::ToReadOptions(options, &lo, &hi), Bytes(key, keylen), &value),
          errptr)) {
    return 0;
  }
  const std::string_view v = value.value();
  if (!v.empty() && buflen != 0) std::memcpy(buf, v.data(), std::min(v.size(), buflen));
  return v.size();
}

cairn_pinnable_t* cairn_get_pinned(cairn_t* db, const cairn_readoptions_t* options, const char* key,
                                   size_t keylen, char** errptr) {
  if (!SaveError(CheckDb(db), errptr) || !SaveError(CheckBytes(key, keylen, "key"), errptr)) {
    return nullptr;
  }
  std::string_view lo, hi;
  auto out = std::make_unique<cairn_pinnable_t>();
  if (!SaveError(db->db->Get(cairn::c_api::ToReadOptions(options, &lo, &hi), Bytes(key, keylen),
                             &out->value),
                 errptr)) {
    return nullptr;
  }
  return out.release();
}

const char* cairn_pinnable_value(const cairn_pinnable_t* v, size_t* vallen) {
  if (v == nullptr) {
    if (vallen != nullptr) *vallen = 0;
    return nullptr;
  }
  if (vallen != nullptr) *vallen = v->value.size();
  return v->value.value().data();
}

void cairn_pinnable_destroy(cairn_pinnable_t* v) { delete v; }

char* cairn_get_range(cairn_t* db, const cairn_readoptions_t* options, const char* key,
                      size_t keylen, uint64_t offset, uint64_t length, size_t* outlen,
                      char** errptr) {
  if (outlen != nullptr) *outlen = 0;
  if (!SaveError(CheckDb(db), errptr) || !SaveError(CheckBytes(key, keylen, "key"), errptr)) {
    return nullptr;
  }
  std::string_view lo, hi;
  std::string out;
  if (!SaveError(db->db->GetRange(cairn::c_api::ToReadOptions(options, &lo, &hi),
                                  Bytes(key, keylen), offset, length, &out),
                 errptr)) {
    return nullptr;
  }
  if (outlen != nullptr) *outlen = out.size();
  return CopyOut(out);
}

void cairn_multi_get(cairn_t* db, const cairn_readoptions_t* options, size_t n,
                     const char* const* keys, const size_t* keylens, char** values, size_t* vallens,
                     char** errs) {
  if (n == 0) return;
  if (values == nullptr || vallens == nullptr || errs == nullptr) return;  // nowhere to answer
  for (size_t i = 0; i < n; ++i) {
    values[i] = nullptr;
    vallens[i] = 0;
    errs[i] = nullptr;
  }
  absl::Status shared = CheckDb(db);
  if (shared.ok() && (keys == nullptr || keylens == nullptr)) {
    shared = absl::InvalidArgumentError("keys or keylens is NULL");
  }
  for (size_t i = 0; shared.ok() && i < n; ++i) {
    shared = CheckBytes(keys[i], keylens[i], "key");
  }
  if (!shared.ok()) {
    for (size_t i = 0; i < n; ++i) SaveError(shared, &errs[i]);
    return;
  }
  std::vector<std::string_view> ks;
  ks.reserve(n);
  for (size_t i = 0; i < n; ++i) ks.push_back(Bytes(keys[i], keylens[i]));
  std::string_view lo, hi;
  std::vector<std::string> vs;
  const std::vector<absl::Status> statuses =
      db->db->MultiGet(cairn::c_api::ToReadOptions(options, &lo, &hi), ks, &vs);
  for (size_t i = 0; i < n; ++i) {
    const absl::Status s = i < statuses.size() ? statuses[i] : absl::InternalError("no status");
    if (!SaveError(s, &errs[i])) continue;
    values[i] = CopyOut(vs[i]);
    vallens[i] = vs[i].size();
  }
}

}  // extern "C"
