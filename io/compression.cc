#include "io/compression.h"

#include <zstd.h>

#include "absl/strings/str_cat.h"

namespace cairn::io {

absl::Status ZstdCompress(std::string_view input, int level, std::string* out) {
  size_t bound = ZSTD_compressBound(input.size());
  size_t old = out->size();
  out->resize(old + bound);
  size_t n = ZSTD_compress(out->data() + old, bound, input.data(), input.size(), level);
  if (ZSTD_isError(n)) {
    out->resize(old);
    return absl::InternalError(absl::StrCat("zstd compress: ", ZSTD_getErrorName(n)));
  }
  out->resize(old + n);
  return absl::OkStatus();
}

absl::Status ZstdUncompress(std::string_view frame, size_t max_size, std::string* out) {
  unsigned long long size = ZSTD_getFrameContentSize(frame.data(), frame.size());
  if (size == ZSTD_CONTENTSIZE_ERROR || size == ZSTD_CONTENTSIZE_UNKNOWN) {
    return absl::DataLossError("zstd: bad frame header");
  }
  if (size > max_size) {
    return absl::DataLossError(absl::StrCat("zstd: frame claims ", size, " bytes, limit ", max_size));
  }
  out->resize(size);
  size_t n = ZSTD_decompress(out->data(), size, frame.data(), frame.size());
  if (ZSTD_isError(n) || n != size) {
    return absl::DataLossError(absl::StrCat("zstd: ", ZSTD_isError(n) ? ZSTD_getErrorName(n) : "short frame"));
  }
  return absl::OkStatus();
}

}  // namespace cairn::io
