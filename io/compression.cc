#include "io/compression.h"

#include <zstd.h>

#include "absl/strings/str_cat.h"

namespace cairn::io {
namespace {

// Setting up a zstd context costs more than compressing or decompressing a
// 4 KiB block (ZSTD_compress and ZSTD_decompress make one per call: 37% of
// a cached point read's time went there), so each thread keeps one of each.
struct ZstdContexts {
  ZSTD_CCtx* cctx = nullptr;
  ZSTD_DCtx* dctx = nullptr;
  ~ZstdContexts() {
    ZSTD_freeCCtx(cctx);
    ZSTD_freeDCtx(dctx);
  }
};

ZstdContexts& ThreadContexts() {
  thread_local ZstdContexts contexts;
  return contexts;
}

}  // namespace

absl::Status ZstdCompress(std::string_view input, int level, std::string* out) {
  size_t bound = ZSTD_compressBound(input.size());
  size_t old = out->size();
  out->resize(old + bound);
  ZstdContexts& ctx = ThreadContexts();
  if (ctx.cctx == nullptr) ctx.cctx = ZSTD_createCCtx();
  if (ctx.cctx == nullptr) {
    out->resize(old);
    return absl::ResourceExhaustedError("zstd compress: cannot allocate a context");
  }
  size_t n =
      ZSTD_compressCCtx(ctx.cctx, out->data() + old, bound, input.data(), input.size(), level);
  if (ZSTD_isError(n)) {
    out->resize(old);
    return absl::InternalError(absl::StrCat("zstd compress: ", ZSTD_getErrorName(n)));
  }
  out->resize(old + n);
  return absl::OkStatus();
}

absl::Status ZstdUncompressAppend(std::string_view frame, size_t max_size, std::string* out) {
  unsigned long long size = ZSTD_getFrameContentSize(frame.data(), frame.size());
  if (size == ZSTD_CONTENTSIZE_ERROR || size == ZSTD_CONTENTSIZE_UNKNOWN) {
    return absl::DataLossError("zstd: bad frame header");
  }
  if (size > max_size) {
    return absl::DataLossError(absl::StrCat("zstd: frame claims ", size, " bytes, limit ", max_size));
  }
  ZstdContexts& ctx = ThreadContexts();
  if (ctx.dctx == nullptr) ctx.dctx = ZSTD_createDCtx();
  if (ctx.dctx == nullptr) {
    return absl::ResourceExhaustedError("zstd uncompress: cannot allocate a context");
  }
  const size_t old = out->size();
  out->resize(old + size);
  size_t n = ZSTD_decompressDCtx(ctx.dctx, out->data() + old, size, frame.data(), frame.size());
  if (ZSTD_isError(n) || n != size) {
    out->resize(old);
    return absl::DataLossError(absl::StrCat("zstd: ", ZSTD_isError(n) ? ZSTD_getErrorName(n) : "short frame"));
  }
  return absl::OkStatus();
}

absl::Status ZstdUncompress(std::string_view frame, size_t max_size, std::string* out) {
  out->clear();
  return ZstdUncompressAppend(frame, max_size, out);
}

}  // namespace cairn::io
