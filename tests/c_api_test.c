/* The C API (cairn/c.h), compiled as C99: every function, its error paths
 * (bad options, a missing database, a second open, NULL and oversize
 * arguments, use after close), and a model test of random operations
 * against an in-memory table across reopens, and one DB from four threads.
 * Prints "N passed, M failed" and exits non-zero on any failure. */
/* mkdtemp is POSIX 2008, outside strict C99. */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cairn/c.h"
#include "tests/c_api_check.h"


/* No error; prints the message of one. */
#define CHECK_OK(err)                                                              \
  do {                                                                             \
    if ((err) == NULL) {                                                           \
      ++g_passed;                                                                  \
    } else {                                                                       \
      ++g_failed;                                                                  \
      fprintf(stderr, "%s:%d: unexpected error: %s\n", __FILE__, __LINE__, (err)); \
      cairn_free(err);                                                             \
      (err) = NULL;                                                                \
    }                                                                              \
  } while (0)

/* An error with this code; frees it. */
#define CHECK_CODE(err, code)                                                                  \
  do {                                                                                         \
    if (cairn_error_code(err) == (code)) {                                                     \
      ++g_passed;                                                                              \
    } else {                                                                                   \
      ++g_failed;                                                                              \
      fprintf(stderr, "%s:%d: wanted %s, got %s\n", __FILE__, __LINE__, cairn_code_name(code), \
              (err) != NULL ? (err) : "no error");                                             \
    }                                                                                          \
    cairn_free(err);                                                                           \
    (err) = NULL;                                                                              \
  } while (0)

static char g_root[256];

static void make_path(char* out, size_t n, const char* name) {
  snprintf(out, n, "%s/%s", g_root, name);
}

/* Small, fast options: tiny memtables and segments so that flushes,
 * separated values and GC happen within the test. */
static cairn_options_t* small_options(void) {
  cairn_options_t* o = cairn_options_create();
  cairn_options_set_memtable_size(o, 64 << 10);
  cairn_options_set_value_separation_threshold(o, 64);
  cairn_options_set_value_log_segment_size(o, 256 << 10);
  cairn_options_set_wal_prefill_bytes(o, 0);
  cairn_options_set_io_backend(o, 2);
  cairn_options_set_gc_nice_adjustment(o, 0);
  cairn_options_set_stats_dump_period_sec(o, 0);
  return o;
}

static void test_errors_and_version(void) {
  char* err = NULL;
  CHECK(strlen(cairn_version()) > 0);
  CHECK(cairn_version_number() >= 100 || cairn_version_number() < 100);
  CHECK(cairn_error_code(NULL) == CAIRN_OK);
  CHECK(cairn_error_code("NotFound: x") == CAIRN_NOT_FOUND);
  CHECK(cairn_error_code("DataLoss: file 000001.vlog at 12") == CAIRN_DATA_LOSS);
  CHECK(cairn_error_code("garbage") == CAIRN_UNKNOWN);
  CHECK(strcmp(cairn_code_name(CAIRN_INVALID_ARGUMENT), "InvalidArgument") == 0);
  CHECK(strcmp(cairn_code_name((cairn_code)99), "Unknown") == 0);
  cairn_free(NULL);
  /* A NULL db everywhere: InvalidArgument, never a crash. */
  cairn_put(NULL, NULL, "k", 1, "v", 1, &err);
  CHECK_CODE(err, CAIRN_INVALID_ARGUMENT);
  CHECK(cairn_get(NULL, NULL, "k", 1, NULL, &err) == NULL);
  CHECK_CODE(err, CAIRN_INVALID_ARGUMENT);
  cairn_flush(NULL, &err);
  CHECK_CODE(err, CAIRN_INVALID_ARGUMENT);
  cairn_close(NULL, &err);
  CHECK_CODE(err, CAIRN_INVALID_ARGUMENT);
  CHECK(cairn_create_iterator(NULL, NULL, &err) == NULL);
  CHECK_CODE(err, CAIRN_INVALID_ARGUMENT);
  CHECK(cairn_create_snapshot(NULL) == NULL);
  CHECK(cairn_property_value(NULL, "cairn.stats") == NULL);
  CHECK(cairn_open(NULL, g_root, &err) == NULL);
  CHECK_CODE(err, CAIRN_INVALID_ARGUMENT);
  cairn_release(NULL);
  cairn_release_snapshot(NULL, NULL);
  /* NULL option handles: setters ignore them, getters return 0. */
  cairn_options_set_block_size(NULL, 1);
  CHECK(cairn_options_get_block_size(NULL) == 0);
  CHECK(cairn_readoptions_get_fill_cache(NULL) == 0);
  CHECK(cairn_writeoptions_get_sync(NULL) == 0);
  /* A NULL iterator or pinnable. */
  CHECK(!cairn_iter_valid(NULL));
  cairn_iter_next(NULL);
  cairn_iter_seek_to_first(NULL);
  CHECK(cairn_iter_key(NULL, NULL) == NULL);
  cairn_iter_get_error(NULL, &err);
  CHECK_CODE(err, CAIRN_INVALID_ARGUMENT);
  CHECK(cairn_pinnable_value(NULL, NULL) == NULL);
  /* errptr may arrive holding an older message: it is freed, not leaked. */
  err = (char*)malloc(4);
  strcpy(err, "old");
  cairn_flush(NULL, &err);
  CHECK_CODE(err, CAIRN_INVALID_ARGUMENT);
}

static void test_options(void) {
  cairn_options_t* o = cairn_options_create();
  CHECK(cairn_options_get_create_if_missing(o) == 1);
  CHECK(cairn_options_get_memtable_size(o) == (size_t)64 << 20);
  CHECK(cairn_options_get_compression(o) == 1);
  CHECK(cairn_options_get_gc_space_amp_trigger(o) > 1.4);
  /* Every setter round-trips through its getter. */
#define ROUND(name, v)            \
  cairn_options_set_##name(o, v); \
  CHECK(cairn_options_get_##name(o) == (v));
  ROUND(create_if_missing, 0)
  ROUND(error_if_exists, 1)
  ROUND(memtable_size, 1 << 20) ROUND(max_memtable_value_bytes, 7) ROUND(block_size, 8192)
      ROUND(cache_size, 1 << 20) ROUND(block_cache_size, 3) ROUND(cache_new_table_blocks, 0) ROUND(
          bloom_bits_per_key, 5) ROUND(compression, 0) ROUND(io_backend, 2) ROUND(direct_reads, 1)
          ROUND(direct_writes, 1) ROUND(value_log_bytes_per_sync, 9) ROUND(wal_bytes_per_sync, 11)
              ROUND(wal_prefill_bytes, 0) ROUND(value_separation_threshold, CAIRN_INLINE_VALUES)
                  ROUND(separate_at_flush_below, 13) ROUND(separate_at_flush_during_gc, 1)
                      ROUND(value_log_segment_size, 1 << 22) ROUND(value_cache_size, 17)
                          ROUND(target_file_size, 1 << 21) ROUND(level_size_multiplier, 8)
                              ROUND(soft_pending_compaction_bytes_limit, 19)
                                  ROUND(hard_pending_compaction_bytes_limit, 23) ROUND(
                                      gc_min_garbage_ratio, 0.25) ROUND(gc_space_amp_trigger, 1.5)
                                      ROUND(gc_bytes_per_sec, 29) ROUND(gc_punch_holes, 0)
                                          ROUND(max_background_gc, 2) ROUND(gc_nice_adjustment, 3)
                                              ROUND(max_background_compactions, 2)
                                                  ROUND(max_subcompactions, 1)
                                                      ROUND(compaction_readahead_size, 31)
                                                          ROUND(max_info_log_size, 0)
                                                              ROUND(stats_dump_period_sec, 0)
#undef ROUND
                                                                  cairn_options_destroy(o);

  cairn_readoptions_t* ro = cairn_readoptions_create();
  CHECK(cairn_readoptions_get_verify_checksums(ro) == 1);
  cairn_readoptions_set_verify_checksums(ro, 0);
  CHECK(cairn_readoptions_get_verify_checksums(ro) == 0);
  cairn_readoptions_set_fill_cache(ro, 0);
  CHECK(cairn_readoptions_get_fill_cache(ro) == 0);
  cairn_readoptions_set_value_prefetch_depth(ro, 4);
  CHECK(cairn_readoptions_get_value_prefetch_depth(ro) == 4);
  cairn_readoptions_set_value_prefetch_bytes(ro, 4096);
  CHECK(cairn_readoptions_get_value_prefetch_bytes(ro) == 4096);
  cairn_readoptions_set_readahead_size(ro, 1 << 16);
  CHECK(cairn_readoptions_get_readahead_size(ro) == 1 << 16);
  cairn_readoptions_destroy(ro);

  cairn_writeoptions_t* wo = cairn_writeoptions_create();
  CHECK(cairn_writeoptions_get_sync(wo) == 0);
  cairn_writeoptions_set_sync(wo, 1);
  CHECK(cairn_writeoptions_get_sync(wo) == 1);
  cairn_writeoptions_destroy(wo);
}

static void test_open_errors(void) {
  char path[512], *err = NULL;
  make_path(path, sizeof(path), "open_errors");
  cairn_options_t* o = small_options();
  /* Missing database without create_if_missing. */
  cairn_options_set_create_if_missing(o, 0);
  CHECK(cairn_open(o, path, &err) == NULL);
  CHECK(err != NULL);
  cairn_free(err);
  err = NULL;
  cairn_options_set_create_if_missing(o, 1);
  /* Bad options: an enum out of range, and a value Open validates. */
  cairn_options_set_compression(o, 7);
  CHECK(cairn_open(o, path, &err) == NULL);
  CHECK_CODE(err, CAIRN_INVALID_ARGUMENT);
  cairn_options_set_compression(o, 1);
  cairn_options_set_io_backend(o, -1);
  CHECK(cairn_open(o, path, &err) == NULL);
  CHECK_CODE(err, CAIRN_INVALID_ARGUMENT);
  cairn_options_set_io_backend(o, 2);
  cairn_options_set_max_background_gc(o, 0);
  CHECK(cairn_open(o, path, &err) == NULL);
  CHECK_CODE(err, CAIRN_INVALID_ARGUMENT);
  cairn_options_set_max_background_gc(o, 1);
  CHECK(cairn_open(o, NULL, &err) == NULL);
  CHECK_CODE(err, CAIRN_INVALID_ARGUMENT);
  /* A second open of the same directory is refused while the first holds it. */
  cairn_t* db = cairn_open(o, path, &err);
  CHECK_OK(err);
  CHECK(db != NULL);
  CHECK(cairn_open(o, path, &err) == NULL);
  CHECK(err != NULL);
  cairn_free(err);
  err = NULL;
  /* error_if_exists. */
  cairn_close(db, &err);
  CHECK_OK(err);
  cairn_release(db);
  cairn_options_set_error_if_exists(o, 1);
  CHECK(cairn_open(o, path, &err) == NULL);
  CHECK(err != NULL);
  cairn_free(err);
  err = NULL;
  cairn_options_destroy(o);
}

static void test_reads_writes(void) {
  char path[512], *err = NULL;
  make_path(path, sizeof(path), "rw");
  cairn_options_t* o = small_options();
  cairn_t* db = cairn_open(o, path, &err);
  CHECK_OK(err);
  cairn_writeoptions_t* wo = cairn_writeoptions_create();
  cairn_readoptions_t* ro = cairn_readoptions_create();

  cairn_put(db, wo, "a", 1, "one", 3, &err);
  CHECK_OK(err);
  cairn_put(db, NULL, "empty", 5, NULL, 0, &err); /* an empty value, NULL allowed */
  CHECK_OK(err);
  size_t len = 99;
  char* v = cairn_get(db, ro, "a", 1, &len, &err);
  CHECK_OK(err);
  CHECK(v != NULL && len == 3 && memcmp(v, "one", 3) == 0);
  cairn_free(v);
  v = cairn_get(db, NULL, "empty", 5, &len, &err);
  CHECK_OK(err);
  CHECK(v != NULL && len == 0);
  cairn_free(v);
  CHECK(cairn_get(db, ro, "missing", 7, &len, &err) == NULL);
  CHECK_CODE(err, CAIRN_NOT_FOUND);
  /* A put with a TTL reads back until it expires; a TTL of 0 is refused. */
  cairn_put_with_ttl(db, wo, "t", 1, "ttl", 3, 3600, &err);
  CHECK_OK(err);
  v = cairn_get(db, ro, "t", 1, &len, &err);
  CHECK_OK(err);
  CHECK(v != NULL && len == 3 && memcmp(v, "ttl", 3) == 0);
  cairn_free(v);
  cairn_put_with_ttl(db, wo, "t0", 2, "x", 1, 0, &err);
  CHECK_CODE(err, CAIRN_INVALID_ARGUMENT);
  /* NULL key with a length, oversize key and value. */
  cairn_put(db, wo, NULL, 3, "v", 1, &err);
  CHECK_CODE(err, CAIRN_INVALID_ARGUMENT);
  cairn_put(db, wo, "k", 1, NULL, 3, &err);
  CHECK_CODE(err, CAIRN_INVALID_ARGUMENT);
  CHECK(cairn_get(db, ro, NULL, 3, &len, &err) == NULL);
  CHECK_CODE(err, CAIRN_INVALID_ARGUMENT);
  cairn_delete(db, wo, NULL, 1, &err);
  CHECK_CODE(err, CAIRN_INVALID_ARGUMENT);
  char* big = (char*)calloc(CAIRN_MAX_KEY_SIZE + 1, 1);
  cairn_put(db, wo, big, CAIRN_MAX_KEY_SIZE + 1, "v", 1, &err);
  CHECK_CODE(err, CAIRN_INVALID_ARGUMENT);
  free(big);

  /* A value large enough to be separated, read by range, into a buffer,
   * and pinned. */
  size_t n = 100000;
  char* large = (char*)malloc(n);
  for (size_t i = 0; i < n; ++i) large[i] = (char)('a' + i % 26);
  cairn_put(db, wo, "large", 5, large, n, &err);
  CHECK_OK(err);
  char* part = cairn_get_range(db, ro, "large", 5, 1000, 50, &len, &err);
  CHECK_OK(err);
  CHECK(part != NULL && len == 50 && memcmp(part, large + 1000, 50) == 0);
  cairn_free(part);
  part = cairn_get_range(db, ro, "large", 5, n + 10, 50, &len, &err);
  CHECK_OK(err);
  CHECK(part != NULL && len == 0);
  cairn_free(part);
  CHECK(cairn_get_range(db, ro, "nope", 4, 0, 1, &len, &err) == NULL);
  CHECK_CODE(err, CAIRN_NOT_FOUND);
  char small[10];
  size_t need = cairn_get_into(db, ro, "large", 5, small, sizeof(small), &err);
  CHECK_OK(err);
  CHECK(need == n && memcmp(small, large, sizeof(small)) == 0);
  char* whole = (char*)malloc(need);
  CHECK(cairn_get_into(db, ro, "large", 5, whole, need, &err) == n);
  CHECK_OK(err);
  CHECK(memcmp(whole, large, n) == 0);
  free(whole);
  CHECK(cairn_get_into(db, ro, "large", 5, NULL, 10, &err) == 0);
  CHECK_CODE(err, CAIRN_INVALID_ARGUMENT);
  CHECK(cairn_get_into(db, ro, "large", 5, NULL, 0, &err) == n); /* size query */
  CHECK_OK(err);
  cairn_pinnable_t* p = cairn_get_pinned(db, ro, "large", 5, &err);
  CHECK_OK(err);
  const char* pv = cairn_pinnable_value(p, &len);
  CHECK(pv != NULL && len == n && memcmp(pv, large, n) == 0);
  cairn_pinnable_destroy(p);
  CHECK(cairn_get_pinned(db, ro, "zzz", 3, &err) == NULL);
  CHECK_CODE(err, CAIRN_NOT_FOUND);
  free(large);

  /* Delete. */
  cairn_delete(db, wo, "a", 1, &err);
  CHECK_OK(err);
  CHECK(cairn_get(db, ro, "a", 1, &len, &err) == NULL);
  CHECK_CODE(err, CAIRN_NOT_FOUND);

  /* Multi-get: found, missing, found. */
  const char* keys[3] = {"empty", "a", "large"};
  size_t keylens[3] = {5, 1, 5}, vallens[3];
  char* vals[3];
  char* errs[3];
  cairn_multi_get(db, ro, 3, keys, keylens, vals, vallens, errs);
  CHECK(errs[0] == NULL && vals[0] != NULL && vallens[0] == 0);
  CHECK(cairn_error_code(errs[1]) == CAIRN_NOT_FOUND && vals[1] == NULL);
  CHECK(errs[2] == NULL && vallens[2] == n);
  for (int i = 0; i < 3; ++i) {
    cairn_free(vals[i]);
    cairn_free(errs[i]);
  }
  cairn_multi_get(NULL, ro, 3, keys, keylens, vals, vallens, errs);
  for (int i = 0; i < 3; ++i) {
    CHECK(vals[i] == NULL);
    CHECK_CODE(errs[i], CAIRN_INVALID_ARGUMENT);
  }

  /* Write batches. */
  cairn_writebatch_t* b = cairn_writebatch_create();
  cairn_writebatch_put(b, "b1", 2, "x", 1);
  cairn_writebatch_put(b, "b2", 2, "y", 1);
  cairn_writebatch_delete(b, "empty", 5);
  CHECK(cairn_writebatch_count(b) == 3);
  cairn_write(db, wo, b, &err);
  CHECK_OK(err);
  CHECK(cairn_get(db, ro, "empty", 5, &len, &err) == NULL);
  CHECK_CODE(err, CAIRN_NOT_FOUND);
  v = cairn_get(db, ro, "b2", 2, &len, &err);
  CHECK_OK(err);
  CHECK(v != NULL && len == 1 && v[0] == 'y');
  cairn_free(v);
  cairn_writebatch_clear(b);
  CHECK(cairn_writebatch_count(b) == 0);
  /* Reserve changes no content; a NULL batch is ignored. */
  cairn_writebatch_reserve(b, 1 << 20);
  cairn_writebatch_reserve(NULL, 1 << 20);
  CHECK(cairn_writebatch_count(b) == 0);
  /* A NULL key in a batch refuses the whole batch. */
  cairn_writebatch_put(b, "b3", 2, "z", 1);
  cairn_writebatch_put(b, NULL, 4, "z", 1);
  cairn_write(db, wo, b, &err);
  CHECK_CODE(err, CAIRN_INVALID_ARGUMENT);
  CHECK(cairn_get(db, ro, "b3", 2, &len, &err) == NULL);
  CHECK_CODE(err, CAIRN_NOT_FOUND);
  cairn_writebatch_clear(b);
  cairn_writebatch_delete(b, NULL, 2);
  cairn_write(db, wo, b, &err);
  CHECK_CODE(err, CAIRN_INVALID_ARGUMENT);
  cairn_write(db, wo, NULL, &err);
  CHECK_CODE(err, CAIRN_INVALID_ARGUMENT);
  cairn_writebatch_destroy(b);
  cairn_writebatch_put(NULL, "k", 1, "v", 1);
  CHECK(cairn_writebatch_count(NULL) == 0);

  /* Use after close: FailedPrecondition everywhere. */
  cairn_close(db, &err);
  CHECK_OK(err);
  cairn_put(db, wo, "a", 1, "v", 1, &err);
  CHECK_CODE(err, CAIRN_FAILED_PRECONDITION);
  CHECK(cairn_get(db, ro, "b1", 2, &len, &err) == NULL);
  CHECK_CODE(err, CAIRN_FAILED_PRECONDITION);
  CHECK(cairn_create_iterator(db, ro, &err) == NULL);
  CHECK_CODE(err, CAIRN_FAILED_PRECONDITION);
  CHECK(cairn_create_snapshot(db) == NULL);
  cairn_close(db, &err);
  CHECK_CODE(err, CAIRN_FAILED_PRECONDITION);
  cairn_flush(db, &err);
  CHECK_CODE(err, CAIRN_FAILED_PRECONDITION);
  CHECK(cairn_property_value(db, "cairn.stats") == NULL);
  cairn_release(db);

  /* Read only: reads work, writes are FailedPrecondition. */
  cairn_t* rdb = cairn_open_for_read_only(o, path, &err);
  CHECK_OK(err);
  v = cairn_get(rdb, ro, "b1", 2, &len, &err);
  CHECK_OK(err);
  CHECK(v != NULL && len == 1 && v[0] == 'x');
  cairn_free(v);
  cairn_put(rdb, wo, "a", 1, "v", 1, &err);
  CHECK_CODE(err, CAIRN_FAILED_PRECONDITION);
  cairn_close(rdb, &err);
  CHECK_OK(err);
  cairn_release(rdb);

  /* Destroy, then the read-only open finds nothing. */
  cairn_destroy_db(o, path, &err);
  CHECK_OK(err);
  CHECK(cairn_open_for_read_only(o, path, &err) == NULL);
  CHECK_CODE(err, CAIRN_NOT_FOUND);
  cairn_destroy_db(o, path, &err);
  CHECK_CODE(err, CAIRN_NOT_FOUND);
  cairn_destroy_db(o, NULL, &err);
  CHECK_CODE(err, CAIRN_INVALID_ARGUMENT);
  cairn_readoptions_destroy(ro);
  cairn_writeoptions_destroy(wo);
  cairn_options_destroy(o);
}

/* Reads the entries of a next_batch buffer and checks them against
 * "k%03d" -> "v%03d" for i from *next on. */
static void check_batch(const char* buf, size_t used, size_t count, int* next) {
  size_t off = 0;
  for (size_t e = 0; e < count; ++e) {
    uint32_t kl, vl;
    memcpy(&kl, buf + off, 4);
    memcpy(&vl, buf + off + 4, 4);
    off += 8;
    char want[8];
    snprintf(want, sizeof(want), "k%03d", *next);
    CHECK(kl == 4 && memcmp(buf + off, want, 4) == 0);
    off += kl;
    want[0] = 'v';
    CHECK(vl == 4 && memcmp(buf + off, want, 4) == 0);
    off += vl;
    ++*next;
  }
  CHECK(off == used);
}

static void test_iterators_snapshots(void) {
  char path[512], *err = NULL;
  make_path(path, sizeof(path), "iter");
  cairn_options_t* o = small_options();
  cairn_t* db = cairn_open(o, path, &err);
  CHECK_OK(err);
  char k[8], v[8];
  for (int i = 0; i < 100; ++i) {
    snprintf(k, sizeof(k), "k%03d", i);
    snprintf(v, sizeof(v), "v%03d", i);
    cairn_put(db, NULL, k, 4, v, 4, &err);
    CHECK_OK(err);
  }
  const cairn_snapshot_t* snap = cairn_create_snapshot(db);
  CHECK(snap != NULL);
  cairn_put(db, NULL, "k000", 4, "new!", 4, &err);
  CHECK_OK(err);

  cairn_readoptions_t* ro = cairn_readoptions_create();
  cairn_readoptions_set_snapshot(ro, snap);
  size_t len;
  char* got = cairn_get(db, ro, "k000", 4, &len, &err);
  CHECK_OK(err);
  CHECK(got != NULL && memcmp(got, "v000", 4) == 0);
  cairn_free(got);

  cairn_iterator_t* it = cairn_create_iterator(db, ro, &err);
  CHECK_OK(err);
  cairn_iter_seek_to_first(it);
  int count = 0;
  for (; cairn_iter_valid(it); cairn_iter_next(it)) ++count;
  CHECK(count == 100);
  cairn_iter_get_error(it, &err);
  CHECK_OK(err);
  cairn_iter_next(it); /* on an invalid iterator: nothing */
  cairn_iter_prev(it);
  CHECK(cairn_iter_key(it, &len) == NULL && len == 0);
  CHECK(cairn_iter_value(it, &len) == NULL && len == 0);
  cairn_iter_seek_to_last(it);
  const char* key = cairn_iter_key(it, &len);
  CHECK(key != NULL && len == 4 && memcmp(key, "k099", 4) == 0);
  cairn_iter_prev(it);
  key = cairn_iter_key(it, &len);
  CHECK(key != NULL && memcmp(key, "k098", 4) == 0);
  cairn_iter_seek(it, "k050", 4);
  const char* val = cairn_iter_value(it, &len);
  CHECK(val != NULL && len == 4 && memcmp(val, "v050", 4) == 0);
  cairn_iter_seek_for_prev(it, "k050x", 5);
  key = cairn_iter_key(it, &len);
  CHECK(key != NULL && memcmp(key, "k050", 4) == 0);
  cairn_iter_seek(it, NULL, 3); /* refused: the iterator stays */
  key = cairn_iter_key(it, &len);
  CHECK(key != NULL && memcmp(key, "k050", 4) == 0);
  cairn_iter_destroy(it);

  /* Bounds [k010, k020) and the batch copy. */
  cairn_readoptions_set_snapshot(ro, NULL);
  cairn_readoptions_set_iterate_lower_bound(ro, "k010", 4);
  cairn_readoptions_set_iterate_upper_bound(ro, "k020", 4);
  it = cairn_create_iterator(db, ro, &err);
  CHECK_OK(err);
  cairn_iter_seek_to_first(it);
  char buf[64];
  size_t used = 0;
  int next = 10;
  size_t got_n = cairn_iter_next_batch(it, buf, sizeof(buf), 100, &used, &err);
  CHECK_OK(err);
  CHECK(got_n == 4); /* 16 bytes an entry */
  check_batch(buf, used, got_n, &next);
  got_n = cairn_iter_next_batch(it, buf, sizeof(buf), 2, &used, &err);
  CHECK(got_n == 2);
  check_batch(buf, used, got_n, &next);
  got_n = cairn_iter_next_batch(it, buf, 10, 2, &used, &err); /* too small for one */
  CHECK(got_n == 0 && used == 16 && cairn_iter_valid(it));
  got_n = cairn_iter_next_batch(it, buf, sizeof(buf), 100, &used, &err);
  CHECK(got_n == 4);
  check_batch(buf, used, got_n, &next);
  CHECK(next == 20);
  CHECK(cairn_iter_next_batch(it, buf, sizeof(buf), 100, &used, &err) == 0 && used == 0);
  CHECK_OK(err);
  CHECK(!cairn_iter_valid(it));
  CHECK(cairn_iter_next_batch(it, NULL, 5, 1, &used, &err) == 0);
  CHECK_CODE(err, CAIRN_INVALID_ARGUMENT);
  CHECK(cairn_iter_next_batch(NULL, buf, 5, 1, &used, &err) == 0);
  CHECK_CODE(err, CAIRN_INVALID_ARGUMENT);
  cairn_iter_destroy(it);
  /* Removing the bounds. */
  cairn_readoptions_set_iterate_lower_bound(ro, NULL, 0);
  cairn_readoptions_set_iterate_upper_bound(ro, NULL, 0);
  it = cairn_create_iterator(db, ro, &err);
  cairn_iter_seek_to_first(it);
  key = cairn_iter_key(it, &len);
  CHECK(key != NULL && memcmp(key, "k000", 4) == 0);
  val = cairn_iter_value(it, &len);
  CHECK(val != NULL && memcmp(val, "new!", 4) == 0); /* no snapshot: latest */
  cairn_iter_destroy(it);

  cairn_release_snapshot(db, snap);
  cairn_readoptions_destroy(ro);
  cairn_close(db, &err);
  CHECK_OK(err);
  cairn_release(db);
  cairn_options_destroy(o);
}

static void test_maintenance(void) {
  char path[512], cp[512], *err = NULL;
  make_path(path, sizeof(path), "maint");
  make_path(cp, sizeof(cp), "maint.checkpoint");
  cairn_options_t* o = small_options();
  cairn_options_set_gc_min_garbage_ratio(o, 0.1);
  cairn_t* db = cairn_open(o, path, &err);
  CHECK_OK(err);
  char k[16], v[200];
  memset(v, 'v', sizeof(v));
  for (int round = 0; round < 3; ++round) {
    for (int i = 0; i < 500; ++i) {
      snprintf(k, sizeof(k), "key%04d", i);
      v[0] = (char)('0' + round);
      cairn_put(db, NULL, k, strlen(k), v, sizeof(v), &err);
      CHECK_OK(err);
    }
  }
  cairn_flush(db, &err);
  CHECK_OK(err);
  cairn_sync_wal(db, &err);
  CHECK_OK(err);
  cairn_compact_range(db, NULL, 0, NULL, 0, &err);
  CHECK_OK(err);
  cairn_compact_range(db, "key0000", 7, "key0100", 7, &err);
  CHECK_OK(err);
  cairn_gc_result_t gc;
  cairn_run_gc(db, &gc, &err);
  CHECK_OK(err);
  cairn_run_gc(db, NULL, &err);
  CHECK_OK(err);
  cairn_wait_for_background_work(db, &err);
  CHECK_OK(err);
  cairn_checkpoint_result_t cr;
  cairn_checkpoint(db, cp, &cr, &err);
  CHECK_OK(err);
  CHECK(cr.files_linked + cr.files_copied > 0);
  cairn_checkpoint(db, cp, NULL, &err); /* exists */
  CHECK_CODE(err, CAIRN_ALREADY_EXISTS);
  cairn_checkpoint(db, NULL, NULL, &err);
  CHECK_CODE(err, CAIRN_INVALID_ARGUMENT);

  char* prop = cairn_property_value(db, "cairn.stats");
  CHECK(prop != NULL && strlen(prop) > 0);
  cairn_free(prop);
  prop = cairn_property_value(db, "cairn.num-files-at-level0");
  CHECK(prop != NULL);
  cairn_free(prop);
  CHECK(cairn_property_value(db, "no.such.property") == NULL);
  CHECK(cairn_property_value(db, NULL) == NULL);
  cairn_stats_t st;
  cairn_get_stats(db, &st, sizeof(st), &err);
  CHECK_OK(err);
  CHECK(st.puts == 1500);
  CHECK(st.user_bytes_written > 1500 * 200);
  CHECK(st.vlog_bytes_written > 0);
  /* An older caller's shorter struct gets its prefix only. */
  uint64_t prefix[3] = {0, 0, 12345};
  cairn_get_stats(db, (cairn_stats_t*)prefix, 2 * sizeof(uint64_t), &err);
  CHECK_OK(err);
  CHECK(prefix[1] == 1500 && prefix[2] == 12345);
  cairn_get_stats(db, NULL, 0, &err);
  CHECK_CODE(err, CAIRN_INVALID_ARGUMENT);
  cairn_close(db, &err);
  CHECK_OK(err);
  cairn_release(db);

  /* The checkpoint opens and holds the last round. */
  cairn_t* cdb = cairn_open(o, cp, &err);
  CHECK_OK(err);
  size_t len;
  char* got = cairn_get(cdb, NULL, "key0499", 7, &len, &err);
  CHECK_OK(err);
  CHECK(got != NULL && len == sizeof(v) && got[0] == '2');
  cairn_free(got);
  cairn_close(cdb, &err);
  CHECK_OK(err);
  cairn_release(cdb);

  /* Repair salvages a whole database and reports. */
  char* report = NULL;
  cairn_repair_db(o, path, &report, &err);
  CHECK_OK(err);
  CHECK(report != NULL && strlen(report) > 0);
  cairn_free(report);
  db = cairn_open(o, path, &err);
  CHECK_OK(err);
  got = cairn_get(db, NULL, "key0000", 7, &len, &err);
  CHECK_OK(err);
  CHECK(got != NULL && got[0] == '2');
  cairn_free(got);
  cairn_release(db); /* closes it */
  cairn_repair_db(o, NULL, NULL, &err);
  CHECK_CODE(err, CAIRN_INVALID_ARGUMENT);
  cairn_options_destroy(o);
}

/* Random puts, deletes, batches and reads against a table in memory, with
 * reopens, checked by gets and a full scan. */
#define MODEL_KEYS 64
static void test_model(void) {
  char path[512], *err = NULL;
  make_path(path, sizeof(path), "model");
  cairn_options_t* o = small_options();
  cairn_t* db = cairn_open(o, path, &err);
  CHECK_OK(err);
  int model[MODEL_KEYS]; /* -1: absent, else the value's seed */
  for (int i = 0; i < MODEL_KEYS; ++i) model[i] = -1;
  unsigned int seed = 58;
  char k[16], v[400];
  int mismatches = 0;
  for (int step = 0; step < 3000; ++step) {
    seed = seed * 1103515245u + 12345u;
    const int op = (int)((seed >> 16) % 100);
    const int key = (int)((seed >> 8) % MODEL_KEYS);
    snprintf(k, sizeof(k), "m%02d", key);
    if (op < 50) {
      const int vs = step;
      const size_t vl = (size_t)(vs % 7 == 0 ? 300 : vs % 13); /* some separated */
      for (size_t i = 0; i < vl; ++i) v[i] = (char)(vs + i);
      cairn_put(db, NULL, k, 3, v, vl, &err);
      CHECK_OK(err);
      model[key] = vs;
    } else if (op < 65) {
      cairn_delete(db, NULL, k, 3, &err);
      CHECK_OK(err);
      model[key] = -1;
    } else if (op < 72) {
      cairn_writebatch_t* b = cairn_writebatch_create();
      char k2[16];
      const int key2 = (key + 1) % MODEL_KEYS;
      snprintf(k2, sizeof(k2), "m%02d", key2);
      v[0] = (char)step;
      cairn_writebatch_put(b, k, 3, v, 1);
      cairn_writebatch_delete(b, k2, 3);
      cairn_write(db, NULL, b, &err);
      CHECK_OK(err);
      cairn_writebatch_destroy(b);
      model[key] = -2 - (step & 0xff); /* one byte: (char)step */
      model[key2] = -1;
    } else if (op < 97) {
      size_t len;
      char* got = cairn_get(db, NULL, k, 3, &len, &err);
      if (model[key] == -1) {
        if (cairn_error_code(err) != CAIRN_NOT_FOUND) ++mismatches;
        cairn_free(err);
        err = NULL;
      } else if (model[key] <= -2) {
        if (got == NULL || len != 1 || got[0] != (char)(-2 - model[key])) ++mismatches;
      } else {
        const int vs = model[key];
        const size_t vl = (size_t)(vs % 7 == 0 ? 300 : vs % 13);
        if (got == NULL || len != vl) {
          ++mismatches;
        } else {
          for (size_t i = 0; i < vl; ++i) {
            if (got[i] != (char)(vs + i)) ++mismatches;
          }
        }
      }
      cairn_free(got);
      CHECK_OK(err);
    } else {
      /* Reopen; sometimes flush first. */
      if (op == 97) {
        cairn_flush(db, &err);
        CHECK_OK(err);
      }
      cairn_close(db, &err);
      CHECK_OK(err);
      cairn_release(db);
      db = cairn_open(o, path, &err);
      CHECK_OK(err);
      if (db == NULL) break;
    }
  }
  CHECK(mismatches == 0);
  /* A full scan agrees with the model. */
  int live = 0, seen = 0;
  for (int i = 0; i < MODEL_KEYS; ++i) live += model[i] != -1;
  cairn_iterator_t* it = cairn_create_iterator(db, NULL, &err);
  CHECK_OK(err);
  for (cairn_iter_seek_to_first(it); cairn_iter_valid(it); cairn_iter_next(it)) {
    size_t kl;
    const char* key = cairn_iter_key(it, &kl);
    const int idx = atoi(key + 1);
    if (kl != 3 || idx < 0 || idx >= MODEL_KEYS || model[idx] == -1) ++mismatches;
    ++seen;
  }
  cairn_iter_destroy(it);
  CHECK(seen == live);
  CHECK(mismatches == 0);
  cairn_close(db, &err);
  CHECK_OK(err);
  cairn_release(db);
  cairn_options_destroy(o);
}

/* One cairn_t from four threads at once (c.h: as the C++ DB). */
#define THREADS 4
struct thread_arg {
  cairn_t* db;
  int id, errors;
};
static void* thread_main(void* p) {
  struct thread_arg* a = (struct thread_arg*)p;
  char k[16], *err = NULL;
  for (int i = 0; i < 300; ++i) {
    snprintf(k, sizeof(k), "t%d-%03d", a->id, i);
    cairn_put(a->db, NULL, k, strlen(k), k, strlen(k), &err);
    size_t len;
    char* v = cairn_get(a->db, NULL, k, strlen(k), &len, &err);
    if (err != NULL || v == NULL || len != strlen(k) || memcmp(v, k, len) != 0) ++a->errors;
    cairn_free(v);
    cairn_free(err);
    err = NULL;
  }
  return NULL;
}
static void test_threads(void) {
  char path[512], *err = NULL;
  make_path(path, sizeof(path), "threads");
  cairn_options_t* o = small_options();
  cairn_t* db = cairn_open(o, path, &err);
  CHECK_OK(err);
  pthread_t t[THREADS];
  struct thread_arg args[THREADS];
  for (int i = 0; i < THREADS; ++i) {
    args[i].db = db;
    args[i].id = i;
    args[i].errors = 0;
    CHECK(pthread_create(&t[i], NULL, thread_main, &args[i]) == 0);
  }
  for (int i = 0; i < THREADS; ++i) {
    pthread_join(t[i], NULL);
    CHECK(args[i].errors == 0);
  }
  cairn_stats_t st;
  cairn_get_stats(db, &st, sizeof(st), &err);
  CHECK_OK(err);
  CHECK(st.puts == THREADS * 300);
  cairn_close(db, &err);
  CHECK_OK(err);
  cairn_release(db);
  cairn_options_destroy(o);
}

int main(void) {
  if (!make_test_root(g_root, sizeof(g_root), "cairn_c_api_test.")) return 2;
  test_errors_and_version();
  test_options();
  test_open_errors();
  test_reads_writes();
  test_iterators_snapshots();
  test_maintenance();
  test_model();
  test_threads();
  return finish_test_root(g_root);
}
