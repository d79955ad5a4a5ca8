/* The C API on damaged files, compiled as C99: each damage is an error with
 * its code (DataLoss) and a message naming the damaged file, never a crash
 * or a silent wrong answer. A damaged CURRENT, MANIFEST and WAL refuse the
 * open; a damaged value-log segment fails the read of the value it holds.
 * Prints "N passed, M failed" and exits non-zero on any failure. */
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cairn/c.h"
#include "tests/c_api_check.h"


static char g_root[256];

/* A database in dir with 200 values of 2 KiB (separated into the value
 * log), some flushed into a table, the last 50 left in the WAL; closed. */
static void build(const char* dir) {
  char* err = NULL;
  cairn_options_t* o = cairn_options_create();
  cairn_options_set_value_separation_threshold(o, 1024);
  cairn_options_set_separate_at_flush_below(o, 0);
  cairn_options_set_gc_space_amp_trigger(o, 0);
  cairn_t* db = cairn_open(o, dir, &err);
  CHECK(err == NULL && db != NULL);
  char key[32], value[2048];
  for (int i = 0; i < 200; ++i) {
    snprintf(key, sizeof(key), "key%05d", i);
    memset(value, 'a' + i % 26, sizeof(value));
    cairn_put(db, NULL, key, strlen(key), value, sizeof(value), &err);
    CHECK(err == NULL);
    if (i == 149) {
      cairn_flush(db, &err);
      CHECK(err == NULL);
    }
  }
  cairn_close(db, &err);
  CHECK(err == NULL);
  cairn_release(db);
  cairn_options_destroy(o);
}

/* The first file in dir whose name ends in suffix (or starts with it when
 * prefix), into out; 0 when none. */
static int find_file(const char* dir, const char* part, int prefix, char* out, size_t n) {
  DIR* d = opendir(dir);
  if (d == NULL) return 0;
  struct dirent* e;
  int found = 0;
  while (!found && (e = readdir(d)) != NULL) {
    const size_t len = strlen(e->d_name), plen = strlen(part);
    if (len < plen) continue;
    if (prefix ? strncmp(e->d_name, part, plen) == 0
               : strcmp(e->d_name + len - plen, part) == 0) {
      snprintf(out, n, "%s/%s", dir, e->d_name);
      found = 1;
    }
  }
  closedir(d);
  return found;
}

/* Overwrites len bytes of path at offset with 0x5a. */
static void scribble(const char* path, long offset, size_t len) {
  FILE* f = fopen(path, "r+b");
  CHECK(f != NULL);
  if (f == NULL) return;
  CHECK(fseek(f, offset, SEEK_SET) == 0);
  for (size_t i = 0; i < len; ++i) fputc(0x5a, f);
  fclose(f);
}

/* The open fails with DataLoss, and its message names name. */
static void expect_open_refused(const char* dir, const char* name) {
  char* err = NULL;
  cairn_options_t* o = cairn_options_create();
  cairn_options_set_create_if_missing(o, 0);
  cairn_t* db = cairn_open(o, dir, &err);
  CHECK(db == NULL);
  CHECK(cairn_error_code(err) == CAIRN_DATA_LOSS);
  CHECK(err != NULL && strstr(err, name) != NULL);
  if (err != NULL && (cairn_error_code(err) != CAIRN_DATA_LOSS || strstr(err, name) == NULL)) {
    fprintf(stderr, "wanted DataLoss naming %s, got: %s\n", name, err);
  }
  cairn_free(err);
  if (db != NULL) cairn_release(db);
  cairn_options_destroy(o);
}

static void test_damaged_current(void) {
  char dir[512], path[600];
  snprintf(dir, sizeof(dir), "%s/current", g_root);
  build(dir);
  snprintf(path, sizeof(path), "%s/CURRENT", dir);
  scribble(path, 0, 4);
  expect_open_refused(dir, "CURRENT");
}

static void test_damaged_manifest(void) {
  char dir[512], path[600];
  snprintf(dir, sizeof(dir), "%s/manifest", g_root);
  build(dir);
  CHECK(find_file(dir, "MANIFEST-", 1, path, sizeof(path)));
  scribble(path, 40, 16);
  expect_open_refused(dir, "MANIFEST-");
}

static void test_damaged_wal(void) {
  char dir[512], path[600];
  snprintf(dir, sizeof(dir), "%s/wal", g_root);
  build(dir);
  CHECK(find_file(dir, ".log", 0, path, sizeof(path)));
  /* Inside the records of the writes a clean close synced. */
  scribble(path, 600, 16);
  expect_open_refused(dir, ".log");
}

static void test_damaged_segment(void) {
  char dir[512], path[600], *err = NULL;
  snprintf(dir, sizeof(dir), "%s/segment", g_root);
  build(dir);
  CHECK(find_file(dir, ".vlog", 0, path, sizeof(path)));
  /* The first value's record: its bytes, past the segment's header. */
  scribble(path, 100, 64);
  cairn_options_t* o = cairn_options_create();
  cairn_t* db = cairn_open(o, dir, &err);
  cairn_options_destroy(o);
  if (db == NULL) {
    /* Refusing the open is as good, when it names the segment. */
    CHECK(cairn_error_code(err) == CAIRN_DATA_LOSS && strstr(err, ".vlog") != NULL);
    cairn_free(err);
    return;
  }
  size_t vlen = 0;
  char* v = cairn_get(db, NULL, "key00000", 8, &vlen, &err);
  CHECK(v == NULL);
  CHECK(cairn_error_code(err) == CAIRN_DATA_LOSS);
  CHECK(err != NULL && strstr(err, ".vlog") != NULL);
  cairn_free(err);
  err = NULL;
  /* Other values still read. */
  v = cairn_get(db, NULL, "key00199", 8, &vlen, &err);
  CHECK(err == NULL && v != NULL && vlen == 2048);
  cairn_free(v);
  cairn_free(err);
  cairn_release(db);
}

int main(void) {
  if (!make_test_root(g_root, sizeof(g_root), "cairn_c_api_damage_")) return 2;
  test_damaged_current();
  test_damaged_manifest();
  test_damaged_wal();
  test_damaged_segment();
  return finish_test_root(g_root);
}
