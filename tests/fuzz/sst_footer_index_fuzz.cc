// Fuzzes the SST framing of lsm/table_format.h: the footer, varint block
// handles, the properties block, and ReadBlockContents following the
// footer's handles (then the index entries' handles) through arbitrary file
// bytes. Everything bad must be a clean status.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "io/memory_file_system.h"
#include "lsm/block.h"
#include "lsm/table_format.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace cairn;
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);

  // Handles and properties straight from the bytes.
  std::string_view handles = bytes;
  for (int i = 0; i < 64; ++i) {
    lsm::BlockHandle h;
    if (!h.DecodeVarintFrom(&handles)) break;
  }
  lsm::TableProperties props;
  props.DecodeFrom(bytes, "fuzz").IgnoreError();

  if (size < lsm::kFooterSize) return 0;
  lsm::Footer footer;
  const uint64_t footer_offset = size - lsm::kFooterSize;
  const absl::Status fs_status =
      footer.DecodeFrom(bytes.substr(footer_offset), "fuzz.sst", footer_offset);
  if (!fs_status.ok()) {
    FUZZ_CHECK(absl::IsDataLoss(fs_status) || absl::IsFailedPrecondition(fs_status));
    return 0;
  }
  io::MemoryFileSystem fs;
  if (!fs.WriteFileFromString("/fuzz.sst", bytes).ok()) return 0;
  auto file = fs.NewRandomAccessFile("/fuzz.sst", {});
  if (!file.ok()) return 0;
  for (const lsm::BlockHandle& h :
       {footer.filter_handle, footer.properties_handle, footer.index_handle}) {
    auto contents = lsm::ReadBlockContents(**file, footer_offset, h, nullptr);
    if (!contents.ok()) FUZZ_CHECK(absl::IsDataLoss(contents.status()));
  }
  auto index = lsm::ReadBlockContents(**file, footer_offset, footer.index_handle, nullptr);
  if (!index.ok()) return 0;
  auto block = lsm::Block::Create(std::move(*index), "fuzz index");
  if (!block.ok()) return 0;
  auto it = (*block)->NewIterator();
  int n = 0;
  for (it->SeekToFirst(); it->Valid() && n < 256; it->Next(), ++n) {
    std::string_view v = it->value();
    lsm::BlockHandle h;
    if (!h.DecodeVarintFrom(&v)) continue;
    auto contents = lsm::ReadBlockContents(**file, footer_offset, h, nullptr);
    if (!contents.ok()) FUZZ_CHECK(absl::IsDataLoss(contents.status()));
  }
  return 0;
}
