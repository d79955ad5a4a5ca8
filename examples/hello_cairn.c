/* hello_cairn.c: the C API (cairn/c.h) from plain C99: open a database,
 * put and get, scan a key range with the batch call, and take a checkpoint
 * beside it (<directory>.checkpoint). Usage: hello_cairn_c [directory]
 * (default: ./hello_cairn_c_db). Build against an installed cairn:
 *   cc -std=c99 hello_cairn.c $(pkg-config --cflags --libs cairn) */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "cairn/c.h"

/* Prints and frees an error; nonzero when there was one. */
static int failed(const char* what, char** err) {
  if (*err == NULL) return 0;
  fprintf(stderr, "%s: %s\n", what, *err);
  cairn_free(*err);
  *err = NULL;
  return 1;
}

int main(int argc, char** argv) {
  const char* dir = argc > 1 ? argv[1] : "hello_cairn_c_db";
  char checkpoint[4096];
  snprintf(checkpoint, sizeof(checkpoint), "%s.checkpoint", dir);
  char* err = NULL;
  int status = 1;

  cairn_options_t* options = cairn_options_create();
  cairn_options_set_create_if_missing(options, 1);
  cairn_t* db = cairn_open(options, dir, &err);
  if (failed("open", &err)) goto out_options;

  char key[16], value[64];
  for (int i = 0; i < 100; ++i) {
    snprintf(key, sizeof(key), "key%03d", i);
    snprintf(value, sizeof(value), "value of key %d", i);
    cairn_put(db, NULL, key, strlen(key), value, strlen(value), &err);
    if (failed("put", &err)) goto out_db;
  }

  size_t len = 0;
  char* got = cairn_get(db, NULL, "key042", 6, &len, &err);
  if (failed("get", &err)) goto out_db;
  printf("key042 = %.*s\n", (int)len, got);
  cairn_free(got);

  /* Scan [key010, key020): many entries per call into one buffer, each one
   * two uint32_t lengths then the key and the value. */
  cairn_readoptions_t* ro = cairn_readoptions_create();
  cairn_readoptions_set_iterate_lower_bound(ro, "key010", 6);
  cairn_readoptions_set_iterate_upper_bound(ro, "key020", 6);
  cairn_iterator_t* it = cairn_create_iterator(db, ro, &err);
  if (failed("iterator", &err)) {
    cairn_readoptions_destroy(ro);
    goto out_db;
  }
  cairn_iter_seek_to_first(it);
  char buf[4096];
  size_t used = 0, n, scanned = 0;
  while ((n = cairn_iter_next_batch(it, buf, sizeof(buf), 64, &used, &err)) > 0) {
    size_t off = 0;
    for (size_t e = 0; e < n; ++e) {
      uint32_t klen, vlen;
      memcpy(&klen, buf + off, sizeof(klen));
      memcpy(&vlen, buf + off + 4, sizeof(vlen));
      off += 8;
      printf("  %.*s -> %.*s\n", (int)klen, buf + off, (int)vlen, buf + off + klen);
      off += klen + vlen;
      ++scanned;
    }
  }
  cairn_iter_destroy(it);
  cairn_readoptions_destroy(ro);
  if (failed("scan", &err)) goto out_db;

  cairn_checkpoint_result_t cp;
  cairn_checkpoint(db, checkpoint, &cp, &err);
  if (failed("checkpoint", &err)) goto out_db;
  printf(
      "hello_cairn_c: %zu keys scanned, checkpoint in %s (%llu files linked, %llu copied), "
      "cairn %s\n",
      scanned, checkpoint, (unsigned long long)cp.files_linked, (unsigned long long)cp.files_copied,
      cairn_version());
  status = scanned == 10 ? 0 : 1;

out_db:
  cairn_close(db, &err);
  if (failed("close", &err)) status = 1;
  cairn_release(db);
out_options:
  cairn_options_destroy(options);
  return status;
}
