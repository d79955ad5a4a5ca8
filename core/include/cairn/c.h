/* The C API: cairn's DB for C99 programs and for other languages' foreign
 * function interfaces (cgo, Python's ctypes, ...). It wraps the C++ API of
 * cairn/db.h one to one; the semantics of each call are those of the C++
 * method it names. Guide: docs/c_api.md.
 *
 * Handles. Every object is an opaque handle made by a *_create or open
 * function and freed by its own *_destroy (or cairn_release for a DB).
 * Passing NULL for a handle is an error (InvalidArgument), never a crash.
 *
 * Errors. A call that can fail takes `char** errptr` last. On success it
 * leaves *errptr as it is (set it to NULL before the call); on failure it
 * frees what *errptr held and stores a malloc'd message that starts with the
 * status code's name: "NotFound: ...", "InvalidArgument: ...",
 * "DataLoss: ...", "FailedPrecondition: ...". cairn_error_code reads the
 * code back from such a message without parsing it yourself. Free the
 * message with cairn_free.
 *
 * Memory. Every char* a cairn_* function returns (values, messages,
 * property text, a repair report) is malloc'd for the caller, who frees it
 * with cairn_free. const char* results
 * (cairn_iter_key, cairn_iter_value, cairn_pinnable_value, cairn_version)
 * point into cairn's memory: valid until the handle moves or is destroyed.
 * Keys, values and paths passed in are copied or used before the call
 * returns; the caller keeps them.
 *
 * Thread safety: as the C++ API. A cairn_t may be used from many threads at
 * once (cairn_close and cairn_release excepted: nothing else may be in flight
 * on that DB); iterators, write batches, options and pinnable values are
 * used by one thread at a time.
 *
 * Close and release. cairn_close closes the database and returns Close's
 * status; the handle stays valid, and every later call on it fails with
 * FailedPrecondition ("closed"). cairn_release frees the handle (closing
 * the database first if cairn_close was not called, its status lost).
 * Destroy iterators and pinned values before releasing their DB.
 */
#ifndef CAIRN_C_H_
#define CAIRN_C_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct cairn_t cairn_t;
typedef struct cairn_options_t cairn_options_t;
typedef struct cairn_readoptions_t cairn_readoptions_t;
typedef struct cairn_writeoptions_t cairn_writeoptions_t;
typedef struct cairn_writebatch_t cairn_writebatch_t;
typedef struct cairn_iterator_t cairn_iterator_t;
typedef struct cairn_snapshot_t cairn_snapshot_t;
typedef struct cairn_pinnable_t cairn_pinnable_t;

/* Status codes: the values of absl::StatusCode. */
typedef enum cairn_code {
  CAIRN_OK = 0,
  CAIRN_CANCELLED = 1,
  CAIRN_UNKNOWN = 2,
  CAIRN_INVALID_ARGUMENT = 3,
  CAIRN_DEADLINE_EXCEEDED = 4,
  CAIRN_NOT_FOUND = 5,
  CAIRN_ALREADY_EXISTS = 6,
  CAIRN_PERMISSION_DENIED = 7,
  CAIRN_RESOURCE_EXHAUSTED = 8,
  CAIRN_FAILED_PRECONDITION = 9,
  CAIRN_ABORTED = 10,
  CAIRN_OUT_OF_RANGE = 11,
  CAIRN_UNIMPLEMENTED = 12,
  CAIRN_INTERNAL = 13,
  CAIRN_UNAVAILABLE = 14,
  CAIRN_DATA_LOSS = 15,
  CAIRN_UNAUTHENTICATED = 16
} cairn_code;

/* The code an errptr message names: CAIRN_OK for NULL, CAIRN_UNKNOWN for a
 * string that is not a cairn message. */
cairn_code cairn_error_code(const char* err);
/* The code's name as messages spell it ("NotFound"); static storage. */
const char* cairn_code_name(cairn_code code);
/* Frees anything cairn malloc'd for the caller (NULL is allowed). */
void cairn_free(void* ptr);

/* "0.1.0", and MAJOR * 10000 + MINOR * 100 + PATCH. */
const char* cairn_version(void);
int cairn_version_number(void);

/* ---- Options (cairn/options.h, struct Options) ---- */
/* Fresh options hold the C++ defaults. Booleans are unsigned char 0/1. */
cairn_options_t* cairn_options_create(void);
void cairn_options_destroy(cairn_options_t* options);

#define CAIRN_C_OPTION_(type, name)                                    \
  void cairn_options_set_##name(cairn_options_t* options, type value); \
  type cairn_options_get_##name(const cairn_options_t* options);
CAIRN_C_OPTION_(unsigned char, create_if_missing)
CAIRN_C_OPTION_(unsigned char, error_if_exists)
CAIRN_C_OPTION_(size_t, memtable_size)
CAIRN_C_OPTION_(uint64_t, max_memtable_value_bytes)
CAIRN_C_OPTION_(size_t, block_size)
CAIRN_C_OPTION_(size_t, cache_size)
CAIRN_C_OPTION_(size_t, block_cache_size)
CAIRN_C_OPTION_(unsigned char, cache_new_table_blocks)
CAIRN_C_OPTION_(int, bloom_bits_per_key)
/* 0: none, 1: zstd; another value fails the open with InvalidArgument. */
CAIRN_C_OPTION_(int, compression)
/* 0: auto, 1: io_uring, 2: POSIX; another value fails the open. */
CAIRN_C_OPTION_(int, io_backend)
CAIRN_C_OPTION_(unsigned char, direct_reads)
CAIRN_C_OPTION_(unsigned char, direct_writes)
CAIRN_C_OPTION_(uint64_t, value_log_bytes_per_sync)
CAIRN_C_OPTION_(uint64_t, wal_bytes_per_sync)
CAIRN_C_OPTION_(uint64_t, wal_prefill_bytes)
/* WAL retention for the change feed (docs/replication.md); 0: no limit of
 * that kind, both 0: no retention. */
CAIRN_C_OPTION_(uint64_t, wal_ttl_seconds)
CAIRN_C_OPTION_(uint64_t, wal_size_limit_bytes)
/* SIZE_MAX (CAIRN_INLINE_VALUES) keeps every value in the LSM tree. */
CAIRN_C_OPTION_(size_t, value_separation_threshold)
CAIRN_C_OPTION_(size_t, separate_at_flush_below)
CAIRN_C_OPTION_(unsigned char, separate_at_flush_during_gc)
CAIRN_C_OPTION_(uint64_t, value_log_segment_size)
CAIRN_C_OPTION_(size_t, value_cache_size)
CAIRN_C_OPTION_(size_t, target_file_size)
CAIRN_C_OPTION_(int, level_size_multiplier)
CAIRN_C_OPTION_(uint64_t, soft_pending_compaction_bytes_limit)
CAIRN_C_OPTION_(uint64_t, hard_pending_compaction_bytes_limit)
CAIRN_C_OPTION_(double, gc_min_garbage_ratio)
CAIRN_C_OPTION_(double, gc_space_amp_trigger)
CAIRN_C_OPTION_(uint64_t, gc_bytes_per_sec)
CAIRN_C_OPTION_(unsigned char, gc_punch_holes)
CAIRN_C_OPTION_(int, max_background_gc)
CAIRN_C_OPTION_(int, gc_nice_adjustment)
CAIRN_C_OPTION_(int, max_background_compactions)
CAIRN_C_OPTION_(int, max_subcompactions)
CAIRN_C_OPTION_(uint64_t, compaction_readahead_size)
CAIRN_C_OPTION_(uint64_t, max_info_log_size)
CAIRN_C_OPTION_(uint32_t, stats_dump_period_sec)
#undef CAIRN_C_OPTION_

#define CAIRN_INLINE_VALUES SIZE_MAX
/* Largest key and value accepted (cairn::kMaxKeySize, kMaxValueSize). */
#define CAIRN_MAX_KEY_SIZE ((size_t)64 * 1024)
#define CAIRN_MAX_VALUE_SIZE ((size_t)256 * 1024 * 1024)

/* ---- ReadOptions ---- */
cairn_readoptions_t* cairn_readoptions_create(void);
void cairn_readoptions_destroy(cairn_readoptions_t* options);
/* NULL reads the latest state. The snapshot must outlive the reads. */
void cairn_readoptions_set_snapshot(cairn_readoptions_t* options, const cairn_snapshot_t* snap);
void cairn_readoptions_set_verify_checksums(cairn_readoptions_t* options, unsigned char v);
unsigned char cairn_readoptions_get_verify_checksums(const cairn_readoptions_t* options);
void cairn_readoptions_set_fill_cache(cairn_readoptions_t* options, unsigned char v);
unsigned char cairn_readoptions_get_fill_cache(const cairn_readoptions_t* options);
void cairn_readoptions_set_value_prefetch_depth(cairn_readoptions_t* options, int v);
int cairn_readoptions_get_value_prefetch_depth(const cairn_readoptions_t* options);
void cairn_readoptions_set_value_prefetch_bytes(cairn_readoptions_t* options, size_t v);
size_t cairn_readoptions_get_value_prefetch_bytes(const cairn_readoptions_t* options);
void cairn_readoptions_set_readahead_size(cairn_readoptions_t* options, size_t v);
size_t cairn_readoptions_get_readahead_size(const cairn_readoptions_t* options);
/* ReadOptions::keys_only: iterators read no value-log byte while they move;
 * cairn_iter_value reads a separated value on demand, cairn_iter_value_size
 * reads nothing. */
void cairn_readoptions_set_keys_only(cairn_readoptions_t* options, unsigned char v);
unsigned char cairn_readoptions_get_keys_only(const cairn_readoptions_t* options);
/* Iterator bounds, lower <= key < upper, copied into the options; a NULL
 * key removes the bound. */
void cairn_readoptions_set_iterate_lower_bound(cairn_readoptions_t* options, const char* key,
                                               size_t keylen);
void cairn_readoptions_set_iterate_upper_bound(cairn_readoptions_t* options, const char* key,
                                               size_t keylen);

/* ---- WriteOptions ---- */
cairn_writeoptions_t* cairn_writeoptions_create(void);
void cairn_writeoptions_destroy(cairn_writeoptions_t* options);
void cairn_writeoptions_set_sync(cairn_writeoptions_t* options, unsigned char v);
unsigned char cairn_writeoptions_get_sync(const cairn_writeoptions_t* options);

/* ---- Open, close, destroy, repair ---- */
/* NULL on failure, with *errptr set. */
cairn_t* cairn_open(const cairn_options_t* options, const char* path, char** errptr);
cairn_t* cairn_open_for_read_only(const cairn_options_t* options, const char* path, char** errptr);
void cairn_close(cairn_t* db, char** errptr);
void cairn_release(cairn_t* db);
void cairn_destroy_db(const cairn_options_t* options, const char* path, char** errptr);
/* RepairDB; *report (when report is not NULL) receives the report's text,
 * malloc'd, whenever the repair got as far as writing one. */
void cairn_repair_db(const cairn_options_t* options, const char* path, char** report,
                     char** errptr);

/* ---- Writes ---- */
/* options may be NULL for the defaults (here and for every read). */
void cairn_put(cairn_t* db, const cairn_writeoptions_t* options, const char* key, size_t keylen,
               const char* val, size_t vallen, char** errptr);
/* DB::PutWithTTL: the key reads as deleted ttl_seconds after the write;
   a TTL of 0 or over kMaxTtlSeconds (2^32) is an InvalidArgument error. */
void cairn_put_with_ttl(cairn_t* db, const cairn_writeoptions_t* options, const char* key,
                        size_t keylen, const char* val, size_t vallen, uint64_t ttl_seconds,
                        char** errptr);
void cairn_delete(cairn_t* db, const cairn_writeoptions_t* options, const char* key, size_t keylen,
                  char** errptr);
/* Deletes every key in [begin, end) (end exclusive). An error (in *errptr)
 * when begin >= end, a key is over the limit, or a pointer is NULL with a
 * length. */
void cairn_delete_range(cairn_t* db, const cairn_writeoptions_t* options, const char* begin,
                        size_t beginlen, const char* end, size_t endlen, char** errptr);

cairn_writebatch_t* cairn_writebatch_create(void);
void cairn_writebatch_destroy(cairn_writebatch_t* batch);
/* A key or value over its limit is refused: cairn_write then fails with
 * InvalidArgument and applies none of the batch (cairn_writebatch_clear
 * resets it). */
void cairn_writebatch_put(cairn_writebatch_t* batch, const char* key, size_t keylen,
                          const char* val, size_t vallen);
void cairn_writebatch_delete(cairn_writebatch_t* batch, const char* key, size_t keylen);
/* An inverted or empty range, or a NULL pointer with a length, makes
 * cairn_write refuse the batch. */
void cairn_writebatch_delete_range(cairn_writebatch_t* batch, const char* begin, size_t beginlen,
                                   const char* end, size_t endlen);
/* Clear keeps the batch's memory for the next batch built in it. */
void cairn_writebatch_clear(cairn_writebatch_t* batch);
/* Room for about bytes more of keys and values (each entry takes a few
 * bytes more), so that a large batch is not copied as it grows. batch NULL:
 * nothing. */
void cairn_writebatch_reserve(cairn_writebatch_t* batch, size_t bytes);
uint32_t cairn_writebatch_count(const cairn_writebatch_t* batch);
void cairn_write(cairn_t* db, const cairn_writeoptions_t* options, cairn_writebatch_t* batch,
                 char** errptr);

/* ---- Reads ---- */
/* The value, malloc'd (never NULL on success, even when empty), its length
 * in *vallen. A missing key is an error, NotFound, as in C++. */
char* cairn_get(cairn_t* db, const cairn_readoptions_t* options, const char* key, size_t keylen,
                size_t* vallen, char** errptr);
/* Copies up to buflen bytes of the value into buf and returns the value's
 * whole length: when that is larger than buflen, call again with a buffer
 * that large (buf NULL with buflen 0 asks for the length alone). 0 with
 * *errptr set on failure. */
size_t cairn_get_into(cairn_t* db, const cairn_readoptions_t* options, const char* key,
                      size_t keylen, char* buf, size_t buflen, char** errptr);
/* The value without a copy where the cache holds it (cairn/pinnable_value.h);
 * NULL on failure. Read it with cairn_pinnable_value; free it with
 * cairn_pinnable_destroy. */
cairn_pinnable_t* cairn_get_pinned(cairn_t* db, const cairn_readoptions_t* options, const char* key,
                                   size_t keylen, char** errptr);
const char* cairn_pinnable_value(const cairn_pinnable_t* v, size_t* vallen);
void cairn_pinnable_destroy(cairn_pinnable_t* v);
/* Bytes [offset, offset + length) of the value (fewer at its end), malloc'd. */
char* cairn_get_range(cairn_t* db, const cairn_readoptions_t* options, const char* key,
                      size_t keylen, uint64_t offset, uint64_t length, size_t* outlen,
                      char** errptr);
/* n keys; for each i, values[i] (malloc'd) and vallens[i] are set when it
 * was read, and errs[i] is NULL, or values[i] is NULL and errs[i] holds the
 * message (NotFound for a missing key). */
void cairn_multi_get(cairn_t* db, const cairn_readoptions_t* options, size_t n,
                     const char* const* keys, const size_t* keylens, char** values, size_t* vallens,
                     char** errs);

/* ---- Iterators (cairn/iterator.h) ---- */
/* NULL on failure. Bounds and snapshot come from options. */
cairn_iterator_t* cairn_create_iterator(cairn_t* db, const cairn_readoptions_t* options,
                                        char** errptr);
void cairn_iter_destroy(cairn_iterator_t* it);
unsigned char cairn_iter_valid(const cairn_iterator_t* it);
void cairn_iter_seek_to_first(cairn_iterator_t* it);
void cairn_iter_seek_to_last(cairn_iterator_t* it);
void cairn_iter_seek(cairn_iterator_t* it, const char* key, size_t keylen);
void cairn_iter_seek_for_prev(cairn_iterator_t* it, const char* key, size_t keylen);
/* Next and Prev on an invalid iterator do nothing. */
void cairn_iter_next(cairn_iterator_t* it);
void cairn_iter_prev(cairn_iterator_t* it);
/* NULL (length 0) when the iterator is not valid. */
const char* cairn_iter_key(const cairn_iterator_t* it, size_t* klen);
/* Under keys_only, reads a separated value (alone); a failed read makes the
 * iterator invalid, returns NULL and cairn_iter_get_error reports it. */
const char* cairn_iter_value(const cairn_iterator_t* it, size_t* vlen);
/* Iterator::value_size: the value's size without reading it under keys_only
 * (a separated value's stored length, cairn/iterator.h); 0 when the
 * iterator is not valid or NULL, or the entry's pointer is damaged (then
 * the iterator is invalid and cairn_iter_get_error says why). */
uint64_t cairn_iter_value_size(const cairn_iterator_t* it);
/* Sets *errptr when the iterator stopped on an error. */
void cairn_iter_get_error(const cairn_iterator_t* it, char** errptr);

/* Copies entries forward from the current one into buf, moving past each,
 * until max_entries are copied, the next one does not fit, or the end.
 * Returns the number copied and sets *bytes_used to the bytes written.
 * Layout, entry after entry with no padding:
 *   uint32_t key length, uint32_t value length (host byte order, unaligned:
 *   read them with memcpy), then the key's bytes, then the value's bytes.
 * Returns 0 when the iterator is at the end (or on an error: *errptr set),
 * or when the current entry alone needs more than buf_len bytes: then
 * *bytes_used is what it needs, larger than buf_len, and the iterator has not
 * moved, so call again with a buffer that large. max_entries 0 copies
 * nothing. */
size_t cairn_iter_next_batch(cairn_iterator_t* it, char* buf, size_t buf_len, size_t max_entries,
                             size_t* bytes_used, char** errptr);
/* On a keys_only iterator cairn_iter_next_batch reads each value it copies
 * (on demand); cairn_iter_next_key_batch reads none.
 * As cairn_iter_next_batch, for listings: each entry is a uint32_t key
 * length, a uint64_t value size (cairn_iter_value_size: from the pointer,
 * no value read, when the iterator is keys_only), then the key's bytes. */
size_t cairn_iter_next_key_batch(cairn_iterator_t* it, char* buf, size_t buf_len,
                                 size_t max_entries, size_t* bytes_used, char** errptr);

/* ---- Snapshots ---- */
/* NULL when the DB is closed or NULL. Release each once. */
const cairn_snapshot_t* cairn_create_snapshot(cairn_t* db);
void cairn_release_snapshot(cairn_t* db, const cairn_snapshot_t* snapshot);

/* ---- Maintenance ---- */
void cairn_flush(cairn_t* db, char** errptr);
void cairn_sync_wal(cairn_t* db, char** errptr);
/* [begin, end], a NULL key for an unbounded side. */
void cairn_compact_range(cairn_t* db, const char* begin, size_t beginlen, const char* end,
                         size_t endlen, char** errptr);
void cairn_wait_for_background_work(cairn_t* db, char** errptr);

/* What cairn_run_gc did (cairn::GcResult). */
typedef struct cairn_gc_result_t {
  uint64_t victims, segments_freed, bytes_read, bytes_relocated, records_relocated, records_dropped,
      rewrites_lost, micros;
} cairn_gc_result_t;
/* result may be NULL. */
void cairn_run_gc(cairn_t* db, cairn_gc_result_t* result, char** errptr);

/* What cairn_checkpoint did (cairn::CheckpointResult). */
typedef struct cairn_checkpoint_result_t {
  uint64_t files_linked, bytes_linked, files_copied, bytes_copied, sequence, micros;
} cairn_checkpoint_result_t;
/* Writes an openable copy to the new directory dir; result may be NULL. */
void cairn_checkpoint(cairn_t* db, const char* dir, cairn_checkpoint_result_t* result,
                      char** errptr);

/* ---- Size estimates (DB::GetApproximateSizes, issue 60) ---- */
/* What to count, OR-ed (cairn::SizeApproximationFlags). */
#define CAIRN_SIZE_INCLUDE_MEMTABLES 1u
#define CAIRN_SIZE_INCLUDE_FILES 2u
#define CAIRN_SIZE_INCLUDE_VALUE_LOG 4u
/* sizes[i] = the approximate bytes of keys in [start_keys[i], limit_keys[i])
 * (parallel arrays of num_ranges keys and lengths), from metadata only.
 * InvalidArgument (sizes untouched): a NULL array with num_ranges > 0, a
 * NULL key with a length, an inverted range, flags naming nothing or an
 * unknown bit. An empty range is 0. */
void cairn_approximate_sizes(cairn_t* db, int num_ranges, const char* const* start_keys,
                             const size_t* start_lens, const char* const* limit_keys,
                             const size_t* limit_lens, uint32_t flags, uint64_t* sizes,
                             char** errptr);
/* DB::GetApproximateKeyCount over [start, limit); 0 with *errptr set on
 * bad input (flags: MEMTABLES and/or FILES). */
uint64_t cairn_approximate_key_count(cairn_t* db, const char* start, size_t startlen,
                                     const char* limit, size_t limitlen, uint32_t flags,
                                     char** errptr);

/* ---- Properties and statistics ---- */
/* GetProperty's text, malloc'd; NULL for an unknown name or a closed DB. */
char* cairn_property_value(cairn_t* db, const char* name);

/* cairn::Stats, its numbers (per level: the property cairn.stats). Fields
 * are only ever appended: cairn_get_stats fills the first `size` bytes, so
 * a program built against an older header keeps working. */
typedef struct cairn_stats_t {
  uint64_t user_bytes_written, puts, deletes, gets, gets_found;
  uint64_t wal_bytes_written, wal_bytes_prefilled, vlog_bytes_written, flush_bytes_written,
      compaction_bytes_written, gc_bytes_written, manifest_bytes_written;
  double write_amplification;
  uint64_t table_reads, table_bytes_read, vlog_reads, vlog_bytes_read;
  double read_amplification;
  uint64_t bloom_probes, bloom_rejections, bloom_false_positives;
  uint64_t block_cache_hits, block_cache_misses, value_cache_hits, value_cache_misses;
  uint64_t block_cache_bytes, block_cache_capacity, value_cache_bytes, value_cache_capacity;
  uint64_t cache_shared; /* 0 or 1 */
  uint64_t disk_bytes, sst_bytes, vlog_bytes, vlog_segments, vlog_garbage_bytes, vlog_punched_bytes,
      vlog_foreseen_garbage_bytes, live_user_bytes_estimate;
  double space_amplification;
  uint64_t stall_slowdowns, stall_stops, stall_micros, stall_max_micros, stall_max_delay_micros,
      delayed_write_rate, pending_compaction_bytes;
  uint64_t gc_runs, gc_segments_freed, gc_bytes_read, gc_bytes_relocated, gc_records_dropped,
      gc_records_known_dead, gc_punched_runs, gc_punched_bytes, gc_punch_calls,
      gc_punch_skipped_linked, gc_punch_held_for_readers, gc_micros, gc_scan_micros,
      gc_liveness_micros, gc_write_micros, gc_rewrite_micros, gc_throttled_micros,
      gc_rewrite_rechecks, gc_victims_waited, gc_victim_syncs, gc_victim_switches,
      gc_victim_bytes_waiting, gc_active_seals;
  double gc_relocated_per_user_byte;
  uint64_t gc_recounted_bytes;
  double vlog_space_amplification, gc_space_amplification;
} cairn_stats_t;
/* Fills stats (size: sizeof(cairn_stats_t) as the caller knows it). */
void cairn_get_stats(cairn_t* db, cairn_stats_t* stats, size_t size, char** errptr);

/* ---- Sequence numbers and the change feed (docs/replication.md) ---- */
typedef struct cairn_updates_t cairn_updates_t;
/* 0 when db is NULL or closed. */
uint64_t cairn_get_latest_sequence_number(cairn_t* db);
/* 0 for NULL. */
uint64_t cairn_snapshot_get_sequence_number(const cairn_snapshot_t* snapshot);
/* cairn_write that also sets *first_sequence (may be NULL) to the
 * sequence number of the batch's first entry. */
void cairn_write_get_sequence(cairn_t* db, const cairn_writeoptions_t* options,
                              cairn_writebatch_t* batch, uint64_t* first_sequence, char** errptr);
/* DB::GetUpdatesSince: NULL on failure (OutOfRange past the retention
 * window, InvalidArgument beyond the latest sequence + 1). */
cairn_updates_t* cairn_get_updates_since(cairn_t* db, uint64_t since, char** errptr);
void cairn_updates_destroy(cairn_updates_t* it);
unsigned char cairn_updates_valid(const cairn_updates_t* it);
void cairn_updates_next(cairn_updates_t* it);
/* Sets *errptr when the feed stopped on an error. */
void cairn_updates_get_error(const cairn_updates_t* it, char** errptr);
/* The current item (REQUIRES valid): its first sequence, its kind (0 a
 * write batch, 1 an ingestion event), and its entries: for a batch, entry
 * i's key and value (*is_put 0 for a delete, value empty); for an
 * ingestion event, file i's name as the key. Pointers stay valid until
 * the next call on it. */
uint64_t cairn_updates_sequence(const cairn_updates_t* it);
int cairn_updates_kind(const cairn_updates_t* it);
size_t cairn_updates_count(const cairn_updates_t* it);
void cairn_updates_entry(const cairn_updates_t* it, size_t i, unsigned char* is_put,
                         const char** key, size_t* keylen, const char** val, size_t* vallen);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* CAIRN_C_H_ */
