// zstd compression, wrapped once so no other folder includes zstd.h.
#ifndef CAIRN_IO_COMPRESSION_H_
#define CAIRN_IO_COMPRESSION_H_

#include <string>
#include <string_view>

#include "absl/status/status.h"

namespace cairn::io {

// Appends the zstd frame of input to *out (level: zstd's, 1..19).
absl::Status ZstdCompress(std::string_view input, int level, std::string* out);

// Replaces *out with the decompressed frame. A frame that claims more than
// max_size bytes or fails to decode is DataLoss.
absl::Status ZstdUncompress(std::string_view frame, size_t max_size, std::string* out);
// As ZstdUncompress, but appends to *out (left as it was on an error).
absl::Status ZstdUncompressAppend(std::string_view frame, size_t max_size, std::string* out);

}  // namespace cairn::io

#endif  // CAIRN_IO_COMPRESSION_H_
