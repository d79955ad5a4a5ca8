// Fuzzes the manifest: VersionEdit::DecodeFrom over arbitrary bytes (an edit
// that decodes must re-encode to bytes that decode to the same encoding), and
// VersionSet::Recover over a fuzzed MANIFEST named by CURRENT. Mode byte:
// even, the rest is the MANIFEST file as is; odd, the rest is a list of
// edits (each a length byte and bytes) framed by the real LogWriter, so the
// fuzzer reaches the version-building checks behind the framing.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "io/memory_file_system.h"
#include "lsm/log_writer.h"
#include "lsm/version_edit.h"
#include "lsm/version_set.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace cairn;
  fuzz::FuzzInput in(data, size);
  const uint8_t mode = in.Byte();
  const std::string_view rest = in.Rest();

  lsm::VersionEdit edit;
  if (edit.DecodeFrom(rest).ok()) {
    std::string once, twice;
    edit.EncodeTo(&once);
    lsm::VersionEdit again;
    FUZZ_CHECK(again.DecodeFrom(once).ok());
    again.EncodeTo(&twice);
    FUZZ_CHECK(once == twice);
    edit.DebugString();
  }

  auto fs = std::make_shared<io::MemoryFileSystem>();
  if (!fs->CreateDir("/db").ok()) return 0;
  if (!fs->WriteFileFromString("/db/CURRENT", "MANIFEST-000001\n").ok()) return 0;
  if (mode % 2 == 0) {
    if (!fs->WriteFileFromString("/db/MANIFEST-000001", rest).ok()) return 0;
  } else {
    auto file = fs->NewWritableFile("/db/MANIFEST-000001", {});
    if (!file.ok()) return 0;
    auto writer = lsm::LogWriter::Create(std::move(*file), 1);
    if (!writer.ok()) return 0;
    fuzz::FuzzInput edits(reinterpret_cast<const uint8_t*>(rest.data()), rest.size());
    while (!edits.empty()) (*writer)->AddRecord(edits.Piece()).IgnoreError();
    if (!(*writer)->Close().ok()) return 0;
  }
  lsm::VersionSet versions(fs.get(), "/db");
  const absl::Status s =
      versions.Recover([](uint32_t, std::string_view) { return absl::OkStatus(); });
  if (s.ok()) {
    auto v = versions.current();
    FUZZ_CHECK(v != nullptr);
  }
  return 0;
}
