/* The C API's sequence numbers and change feed (docs/replication.md),
 * compiled as C99: cairn_write_get_sequence, the latest and a snapshot's
 * sequence, cairn_get_updates_since with a value the value log holds, an
 * ingestion-free feed read to its end, and the errors for a sequence
 * beyond the latest and one past the retention window.
 * Prints "N passed, M failed" and exits non-zero on any failure. */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cairn/c.h"
#include "tests/c_api_check.h"

static char g_root[256];

enum { kBig = 20000 };

static void test_feed(const char* dir, int retain) {
  char* err = NULL;
  cairn_options_t* o = cairn_options_create();
  cairn_options_set_create_if_missing(o, 1);
  cairn_options_set_value_separation_threshold(o, 1024);
  cairn_options_set_separate_at_flush_below(o, 0); /* the WAL holds a pointer */
  cairn_options_set_wal_size_limit_bytes(o, retain ? (64u << 20) : 0);
  cairn_t* db = cairn_open(o, dir, &err);
  cairn_options_destroy(o);
  CHECK(err == NULL && db != NULL);
  if (db == NULL) return;
  CHECK(cairn_get_latest_sequence_number(db) == 0);
  static char big[kBig];
  memset(big, 'v', sizeof(big));
  cairn_writebatch_t* b = cairn_writebatch_create();
  cairn_writebatch_put(b, "a", 1, big, sizeof(big));
  cairn_writebatch_delete(b, "b", 1);
  uint64_t first = 0;
  cairn_write_get_sequence(db, NULL, b, &first, &err);
  CHECK(err == NULL && first == 1);
  cairn_write_get_sequence(db, NULL, b, &first, &err);
  CHECK(err == NULL && first == 3);
  CHECK(cairn_get_latest_sequence_number(db) == 4);
  const cairn_snapshot_t* snap = cairn_create_snapshot(db);
  CHECK(cairn_snapshot_get_sequence_number(snap) == 4);
  cairn_release_snapshot(db, snap);
  cairn_writebatch_destroy(b);
  cairn_flush(db, &err);
  CHECK(err == NULL);

  cairn_updates_t* it = cairn_get_updates_since(db, 2, &err);
  if (!retain) {
    /* The flush deleted the WALs: the window has passed. */
    CHECK(it == NULL && cairn_error_code(err) == CAIRN_OUT_OF_RANGE);
  } else {
    CHECK(err == NULL && it != NULL);
    int items = 0;
    for (; cairn_updates_valid(it); cairn_updates_next(it), ++items) {
      CHECK(cairn_updates_kind(it) == 0);
      CHECK(cairn_updates_sequence(it) == (uint64_t)(1 + 2 * items)); /* 1 holds 2 whole */
      CHECK(cairn_updates_count(it) == 2);
      unsigned char is_put = 0;
      const char *key = NULL, *val = NULL;
      size_t keylen = 0, vallen = 0;
      cairn_updates_entry(it, 0, &is_put, &key, &keylen, &val, &vallen);
      CHECK(is_put == 1 && keylen == 1 && key[0] == 'a' && vallen == kBig &&
            memcmp(val, big, kBig) == 0);
      cairn_updates_entry(it, 1, &is_put, &key, &keylen, &val, &vallen);
      CHECK(is_put == 0 && keylen == 1 && key[0] == 'b' && vallen == 0);
    }
    CHECK(items == 2);
    cairn_updates_get_error(it, &err);
    CHECK(err == NULL);
    cairn_updates_destroy(it);
  }
  cairn_free(err);
  err = NULL;
  CHECK(cairn_get_updates_since(db, 9, &err) == NULL &&
        cairn_error_code(err) == CAIRN_INVALID_ARGUMENT);
  cairn_free(err);
  err = NULL;
  cairn_close(db, &err);
  CHECK(err == NULL);
  cairn_release(db);
}

int main(void) {
  if (!make_test_root(g_root, sizeof(g_root), "cairn_c_api_feed_")) return 2;
  char dir[300];
  snprintf(dir, sizeof(dir), "%s/kept", g_root);
  test_feed(dir, 1);
  snprintf(dir, sizeof(dir), "%s/gone", g_root);
  test_feed(dir, 0);
  return finish_test_root(g_root);
}
