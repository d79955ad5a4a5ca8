/* The C API's range deletions (issue 60, 2026-12-07), compiled as C99:
 * cairn_delete_range and cairn_writebatch_delete_range delete [begin, end)
 * (end exclusive), through a flush and a reopen; inverted or empty ranges,
 * NULL pointers with a length and over-size keys get an error and change
 * nothing.
 * Prints "N passed, M failed" and exits non-zero on any failure. */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cairn/c.h"
#include "tests/c_api_check.h"

static char g_root[256];

static cairn_t* open_db(const char* dir) {
  char* err = NULL;
  cairn_options_t* o = cairn_options_create();
  cairn_options_set_create_if_missing(o, 1);
  cairn_t* db = cairn_open(o, dir, &err);
  CHECK(err == NULL && db != NULL);
  cairn_free(err);
  cairn_options_destroy(o);
  return db;
}

static int present(cairn_t* db, int i) {
  char key[32], *err = NULL;
  size_t len = 0;
  snprintf(key, sizeof(key), "key%03d", i);
  char* v = cairn_get(db, NULL, key, strlen(key), &len, &err);
  const int found = v != NULL;
  cairn_free(v);
  cairn_free(err);
  return found;
}

static int count_present(cairn_t* db) {
  int n = 0;
  for (int i = 0; i < 100; ++i) n += present(db, i);
  return n;
}

/* An error in *err, freed. */
static int failed(char** err) {
  const int f = *err != NULL;
  cairn_free(*err);
  *err = NULL;
  return f;
}

int main(void) {
  if (!make_test_root(g_root, sizeof(g_root), "cairn_c_api_range_")) return 2;
  char dir[300];
  snprintf(dir, sizeof(dir), "%s/db", g_root);
  cairn_t* db = open_db(dir);
  if (db == NULL) return finish_test_root(g_root);
  char* err = NULL;
  char key[32];
  for (int i = 0; i < 100; ++i) {
    snprintf(key, sizeof(key), "key%03d", i);
    cairn_put(db, NULL, key, strlen(key), "v", 1, &err);
    CHECK(!failed(&err));
  }
  cairn_flush(db, &err);
  CHECK(!failed(&err));

  /* Bad arguments: nothing deleted. */
  cairn_delete_range(db, NULL, "key050", 6, "key010", 6, &err);
  CHECK(failed(&err));
  cairn_delete_range(db, NULL, "key010", 6, "key010", 6, &err);
  CHECK(failed(&err));
  cairn_delete_range(db, NULL, NULL, 3, "key010", 6, &err);
  CHECK(failed(&err));
  cairn_delete_range(db, NULL, "key000", 6, NULL, 3, &err);
  CHECK(failed(&err));
  cairn_delete_range(NULL, NULL, "a", 1, "b", 1, &err);
  CHECK(failed(&err));
  char* big = (char*)calloc(CAIRN_MAX_KEY_SIZE + 1, 1);
  cairn_delete_range(db, NULL, "key000", 6, big, CAIRN_MAX_KEY_SIZE + 1, &err);
  CHECK(failed(&err));
  free(big);
  CHECK(count_present(db) == 100);

  /* [key010, key030) by the call, [key050, key060) by a batch. */
  cairn_delete_range(db, NULL, "key010", 6, "key030", 6, &err);
  CHECK(!failed(&err));
  cairn_writebatch_t* batch = cairn_writebatch_create();
  cairn_writebatch_delete_range(batch, "key050", 6, "key060", 6);
  cairn_writebatch_put(batch, "key055", 6, "w", 1); /* after the range: kept */
  cairn_write(db, NULL, batch, &err);
  CHECK(!failed(&err));
  CHECK(present(db, 9) && !present(db, 10) && !present(db, 29) && present(db, 30));
  CHECK(!present(db, 50) && present(db, 55) && present(db, 60));
  CHECK(count_present(db) == 100 - 20 - 10 + 1);

  /* A bad range or a NULL in a batch refuses the whole batch. */
  cairn_writebatch_clear(batch);
  cairn_writebatch_put(batch, "key010", 6, "x", 1);
  cairn_writebatch_delete_range(batch, "key090", 6, "key080", 6);
  cairn_write(db, NULL, batch, &err);
  CHECK(failed(&err));
  cairn_writebatch_clear(batch);
  cairn_writebatch_delete_range(batch, NULL, 2, "key080", 6);
  cairn_write(db, NULL, batch, &err);
  CHECK(failed(&err));
  cairn_writebatch_delete_range(NULL, "a", 1, "b", 1); /* no batch: nothing */
  cairn_writebatch_destroy(batch);
  CHECK(!present(db, 10));

  /* Through a reopen (the WAL) and a flush (the tables). */
  cairn_close(db, &err);
  CHECK(!failed(&err));
  cairn_release(db);
  db = open_db(dir);
  if (db != NULL) {
    CHECK(count_present(db) == 71);
    cairn_flush(db, &err);
    CHECK(!failed(&err));
    cairn_compact_range(db, NULL, 0, NULL, 0, &err);
    CHECK(!failed(&err));
    CHECK(count_present(db) == 71);
    cairn_close(db, &err);
    CHECK(!failed(&err));
    cairn_release(db);
  }
  return finish_test_root(g_root);
}
