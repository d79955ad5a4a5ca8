// Fuzzes the value-log decoders (vlog/vlog_format.h, vlog/value_pointer.h,
// vlog/segment_scanner.h): ParseRecord and RecordValue on the bytes as one
// record, a chunked value's table and chunks (the bytes read as one), the
// segment header, a value pointer, and a SegmentScanner tail scan
// over the bytes as a whole segment file (with and without torn tails
// allowed). A record that parses must lie inside the bytes; a scan that ends
// cleanly must end inside the file.
//
// Input: one flags byte (bit 0: allow a torn tail; bits 1-3: read size;
// bits 0-1 and 4-7 also pick the chunks to decode), then the bytes.
#include <cstddef>
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "io/memory_file_system.h"
#include "tests/fuzz/fuzz_util.h"
#include "vlog/segment_scanner.h"
#include "vlog/value_pointer.h"
#include "vlog/vlog_format.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace cairn;
  fuzz::FuzzInput in(data, size);
  const uint8_t flags = in.Byte();
  const std::string_view bytes = in.Rest();

  vlog::ParsedRecord record;
  if (vlog::ParseRecord(bytes, &record) == vlog::RecordCheck::kOk) {
    FUZZ_CHECK(record.size <= bytes.size());
    FUZZ_CHECK(record.key.size() + record.stored_value.size() + vlog::kRecordHeaderSize ==
               record.size);
    std::string value;
    const absl::Status s = vlog::RecordValue(record, &value);
    FUZZ_CHECK(s.ok() || absl::IsDataLoss(s));
  }
  // The bytes as a chunked value, without the record checksum in front that
  // a fuzzer cannot forge: the table, each chunk decoded alone (unverified,
  // so that the zstd paths are reached) and the value whole.
  vlog::ChunkTableHeader table;
  if (vlog::ParseChunkTableHeader(bytes, bytes.size(), &table).ok() && table.count > 0) {
    const uint32_t first = (flags >> 4) % table.count;
    const uint32_t last = std::min<uint32_t>(table.count - 1, first + (flags & 3));
    const vlog::ChunkEntrySpan span = vlog::EntriesFor(first, last);
    std::vector<vlog::ChunkRef> chunks;
    if (span.offset + span.size <= bytes.size() &&
        vlog::ParseChunkEntries(table, bytes.size(), first, last,
                                bytes.substr(span.offset, span.size), &chunks)
            .ok()) {
      for (const vlog::ChunkRef& c : chunks) {
        FUZZ_CHECK(c.stored_offset + c.stored_size <= bytes.size());
        std::string part;
        const absl::Status s = vlog::DecodeChunk(
            c, bytes.substr(c.stored_offset, c.stored_size), /*verify=*/false, &part);
        FUZZ_CHECK(s.ok() ? part.size() == c.raw_size : absl::IsDataLoss(s));
      }
    }
    std::string value;
    const absl::Status s = vlog::ChunkedValue(bytes, &value);
    FUZZ_CHECK(s.ok() ? value.size() == table.raw_size : absl::IsDataLoss(s));
  }
  vlog::DecodeSegmentHeader(bytes, "fuzz.vlog").status().IgnoreError();
  auto pointer = vlog::DecodeValuePointer(bytes.substr(0, 32));
  if (pointer.ok()) {
    auto again = vlog::DecodeValuePointer(vlog::EncodeValuePointer(*pointer));
    FUZZ_CHECK(again.ok() && *again == *pointer);
  }

  io::MemoryFileSystem fs;
  const std::string path = "/000009.vlog";
  if (!fs.WriteFileFromString(path, bytes).ok()) return 0;
  vlog::SegmentScannerOptions options;
  options.allow_torn_tail = (flags & 1) != 0;
  options.read_size = size_t{64} << ((flags >> 1) & 7);
  auto scanner = vlog::SegmentScanner::Open(&fs, path, /*segment_id=*/9, options);
  if (!scanner.ok()) return 0;
  vlog::ScannedRecord r;
  uint64_t last_end = 0;
  while ((*scanner)->Next(&r)) {
    FUZZ_CHECK(r.offset >= last_end);
    FUZZ_CHECK(r.offset + r.size <= bytes.size());
    last_end = r.offset + r.size;
  }
  if ((*scanner)->status().ok()) {
    FUZZ_CHECK((*scanner)->valid_end_offset() <= bytes.size());
    FUZZ_CHECK((*scanner)->valid_end_offset() >= last_end);
    if (!options.allow_torn_tail) FUZZ_CHECK(!(*scanner)->torn_tail());
  }
  return 0;
}
