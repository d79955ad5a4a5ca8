/* The C API's key-only scans and size estimates (issue 60), compiled as
 * C99: cairn_readoptions_set_keys_only lists keys and value sizes with no
 * value-log read (the engine's own counters), cairn_iter_value still reads
 * on demand; cairn_approximate_sizes and cairn_approximate_key_count are
 * within 10% on uniform keys; NULL handles and bad ranges get a clear
 * answer.
 * Prints "N passed, M failed" and exits non-zero on any failure. */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cairn/c.h"
#include "tests/c_api_check.h"

static char g_root[256];

enum { kKeys = 120, kValueSize = 16 * 1024 };

static void fill_value(char* value, int i) {
  for (int j = 0; j < kValueSize; ++j) value[j] = (char)('a' + (i + j) % 26);
}

/* A database of kKeys values of 16 KiB (separated), 100 flushed into
 * tables, the rest in the memtable; value and block caches off but for
 * blocks, so every value read is counted as a value-log read. */
static cairn_t* build(const char* dir) {
  char* err = NULL;
  cairn_options_t* o = cairn_options_create();
  cairn_options_set_create_if_missing(o, 1);
  cairn_options_set_value_separation_threshold(o, 1024);
  cairn_options_set_separate_at_flush_below(o, 0);
  cairn_options_set_cache_size(o, 0);
  cairn_options_set_block_cache_size(o, 8 << 20);
  cairn_t* db = cairn_open(o, dir, &err);
  CHECK(err == NULL && db != NULL);
  cairn_options_destroy(o);
  if (db == NULL) return NULL;
  static char value[kValueSize];
  char key[32];
  for (int i = 0; i < kKeys; ++i) {
    snprintf(key, sizeof(key), "key%05d", i);
    fill_value(value, i);
    cairn_put(db, NULL, key, strlen(key), value, sizeof(value), &err);
    CHECK(err == NULL);
    if (i == 99) {
      cairn_flush(db, &err);
      CHECK(err == NULL);
    }
  }
  return db;
}

static void test_keys_only(cairn_t* db) {
  char* err = NULL;
  cairn_readoptions_t* ro = cairn_readoptions_create();
  CHECK(cairn_readoptions_get_keys_only(ro) == 0);
  cairn_readoptions_set_keys_only(ro, 1);
  CHECK(cairn_readoptions_get_keys_only(ro) == 1);
  cairn_stats_t before, after;
  cairn_get_stats(db, &before, sizeof(before), &err);
  CHECK(err == NULL);
  cairn_iterator_t* it = cairn_create_iterator(db, ro, &err);
  CHECK(err == NULL && it != NULL);
  int n = 0;
  for (cairn_iter_seek_to_first(it); cairn_iter_valid(it); cairn_iter_next(it)) {
    size_t klen = 0;
    const char* k = cairn_iter_key(it, &klen);
    char want[32];
    snprintf(want, sizeof(want), "key%05d", n);
    CHECK(klen == strlen(want) && memcmp(k, want, klen) == 0);
    CHECK(cairn_iter_value_size(it) == kValueSize);
    ++n;
  }
  CHECK(n == kKeys);
  cairn_iter_get_error(it, &err);
  CHECK(err == NULL);
  cairn_get_stats(db, &after, sizeof(after), &err);
  CHECK(err == NULL);
  CHECK(after.vlog_reads == before.vlog_reads);
  CHECK(after.vlog_bytes_read == before.vlog_bytes_read);
  /* On demand: one value, alone. */
  cairn_iter_seek(it, "key00042", 8);
  CHECK(cairn_iter_valid(it));
  size_t vlen = 0;
  const char* v = cairn_iter_value(it, &vlen);
  static char want[kValueSize];
  fill_value(want, 42);
  CHECK(v != NULL && vlen == kValueSize && memcmp(v, want, vlen) == 0);
  cairn_get_stats(db, &before, sizeof(before), &err);
  /* That value's record and nothing past it (a file system may take it in
   * more than one read). */
  CHECK(before.vlog_reads > after.vlog_reads);
  CHECK(before.vlog_bytes_read - after.vlog_bytes_read >= kValueSize);
  CHECK(before.vlog_bytes_read - after.vlog_bytes_read < 2 * kValueSize);
  /* The key batch: keys and sizes, a buffer-full at a time, still no
   * value-log read. */
  cairn_get_stats(db, &after, sizeof(after), &err);
  static char buf[256]; /* about ten entries a call */
  n = 0;
  cairn_iter_seek_to_first(it);
  size_t got, used;
  while ((got = cairn_iter_next_key_batch(it, buf, sizeof(buf), 1000, &used, &err)) > 0) {
    CHECK(err == NULL);
    size_t at = 0;
    for (size_t e = 0; e < got; ++e, ++n) {
      uint32_t klen;
      uint64_t size;
      memcpy(&klen, buf + at, sizeof(klen));
      memcpy(&size, buf + at + 4, sizeof(size));
      char want_key[32];
      snprintf(want_key, sizeof(want_key), "key%05d", n);
      CHECK(klen == strlen(want_key) && memcmp(buf + at + 12, want_key, klen) == 0);
      CHECK(size == kValueSize);
      at += 12 + klen;
    }
    CHECK(at == used);
  }
  CHECK(err == NULL && n == kKeys);
  cairn_get_stats(db, &before, sizeof(before), &err);
  CHECK(before.vlog_reads == after.vlog_reads);
  CHECK(cairn_iter_next_key_batch(NULL, buf, sizeof(buf), 1, &used, &err) == 0);
  CHECK(err != NULL && cairn_error_code(err) == CAIRN_INVALID_ARGUMENT);
  cairn_free(err);
  err = NULL;
  cairn_iter_destroy(it);
  /* NULL handles: nothing, no crash. */
  CHECK(cairn_iter_value_size(NULL) == 0);
  cairn_readoptions_set_keys_only(NULL, 1);
  CHECK(cairn_readoptions_get_keys_only(NULL) == 0);
  cairn_readoptions_destroy(ro);
}

static void test_approximate_sizes(cairn_t* db) {
  char* err = NULL;
  /* Everything, the first half, an empty and an inverted range. */
  const char* starts[3] = {"key", "key00000", "key00050"};
  const char* limits[3] = {"kez", "key00060", "key00050"};
  size_t start_lens[3], limit_lens[3];
  for (int i = 0; i < 3; ++i) {
    start_lens[i] = strlen(starts[i]);
    limit_lens[i] = strlen(limits[i]);
  }
  uint64_t sizes[3] = {0, 0, 99};
  cairn_approximate_sizes(db, 3, starts, start_lens, limits, limit_lens,
                          CAIRN_SIZE_INCLUDE_FILES | CAIRN_SIZE_INCLUDE_VALUE_LOG |
                              CAIRN_SIZE_INCLUDE_MEMTABLES,
                          sizes, &err);
  CHECK(err == NULL);
  /* 120 values of 16 KiB, 60 of them in the second range, each counted by
   * its value-log record: within 10%. */
  const double all = (double)kKeys * (13 + 8 + kValueSize);
  CHECK(sizes[0] >= 0.9 * all && sizes[0] <= 1.1 * all + 64 * 1024);
  CHECK(sizes[1] >= 0.45 * all && sizes[1] <= 0.55 * all + 64 * 1024);
  CHECK(sizes[2] == 0);
  uint64_t n = cairn_approximate_key_count(db, "key00000", 8, "key00060", 8,
                                           CAIRN_SIZE_INCLUDE_MEMTABLES | CAIRN_SIZE_INCLUDE_FILES,
                                           &err);
  CHECK(err == NULL && n >= 48 && n <= 72); /* one table block: coarse */
  /* Bad input: an inverted range, NULL arrays, a NULL key with a length,
   * no flags; each InvalidArgument with its message, sizes untouched. */
  const char* inv_start = "key00090";
  const char* inv_limit = "key00010";
  size_t eight = 8;
  sizes[0] = 7;
  cairn_approximate_sizes(db, 1, &inv_start, &eight, &inv_limit, &eight,
                          CAIRN_SIZE_INCLUDE_FILES, sizes, &err);
  CHECK(err != NULL && cairn_error_code(err) == CAIRN_INVALID_ARGUMENT &&
        strstr(err, "inverted") != NULL);
  CHECK(sizes[0] == 7);
  cairn_free(err);
  err = NULL;
  cairn_approximate_sizes(db, 1, NULL, &eight, &inv_limit, &eight, CAIRN_SIZE_INCLUDE_FILES, sizes,
                          &err);
  CHECK(err != NULL && cairn_error_code(err) == CAIRN_INVALID_ARGUMENT);
  cairn_free(err);
  err = NULL;
  const char* null_key = NULL;
  cairn_approximate_sizes(db, 1, &null_key, &eight, &inv_limit, &eight, CAIRN_SIZE_INCLUDE_FILES,
                          sizes, &err);
  CHECK(err != NULL && cairn_error_code(err) == CAIRN_INVALID_ARGUMENT);
  cairn_free(err);
  err = NULL;
  cairn_approximate_sizes(db, 1, starts, start_lens, limits, limit_lens, 0, sizes, &err);
  CHECK(err != NULL && cairn_error_code(err) == CAIRN_INVALID_ARGUMENT);
  cairn_free(err);
  err = NULL;
  CHECK(cairn_approximate_key_count(db, "b", 1, "a", 1, CAIRN_SIZE_INCLUDE_FILES, &err) == 0);
  CHECK(err != NULL && cairn_error_code(err) == CAIRN_INVALID_ARGUMENT);
  cairn_free(err);
  err = NULL;
  cairn_approximate_sizes(NULL, 1, starts, start_lens, limits, limit_lens,
                          CAIRN_SIZE_INCLUDE_FILES, sizes, &err);
  CHECK(err != NULL);
  cairn_free(err);
}

int main(void) {
  if (!make_test_root(g_root, sizeof(g_root), "cairn_c_api_scan_")) return 2;
  char dir[300];
  snprintf(dir, sizeof(dir), "%s/db", g_root);
  cairn_t* db = build(dir);
  if (db != NULL) {
    test_keys_only(db);
    test_approximate_sizes(db);
    char* err = NULL;
    cairn_close(db, &err);
    CHECK(err == NULL);
    cairn_release(db);
  }
  return finish_test_root(g_root);
}
