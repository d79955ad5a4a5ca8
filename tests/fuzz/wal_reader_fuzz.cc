// Fuzzes LogReader (lsm/log_reader.h) over arbitrary WAL file bytes in a
// MemoryFileSystem: open, read every record. Whatever the bytes, it must not
// crash, and a clean stop never claims good data past the end of the file.
#include <cstddef>
#include <cstdint>
#include <string>

#include "io/memory_file_system.h"
#include "lsm/log_reader.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace cairn;
  io::MemoryFileSystem fs;
  const std::string path = "/000007.log";
  if (!fs.WriteFileFromString(path, std::string(reinterpret_cast<const char*>(data), size)).ok()) {
    return 0;
  }
  auto reader = lsm::LogReader::Open(&fs, path, /*expected_log_number=*/7);
  if (!reader.ok()) return 0;
  std::string_view record;
  std::string scratch;
  size_t records = 0, bytes = 0;
  while ((*reader)->ReadRecord(&record, &scratch)) {
    ++records;
    bytes += record.size();
    FUZZ_CHECK((*reader)->last_record_offset() < size);
    FUZZ_CHECK(records <= size);  // every record takes at least one byte
  }
  if ((*reader)->status().ok()) {
    FUZZ_CHECK((*reader)->valid_end_offset() <= size);
  }
  FUZZ_CHECK(bytes <= size);
  return 0;
}
