// FlushSegments: the places it hands out before the records reach the file
// are where they land, across its staging writes and its segments, for
// plain, compressed and chunked values; a failed write is reported, not
// lost; Abandon leaves no file.
#include "core/flush_segments.h"

#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "gtest/gtest.h"
#include "io/fault_file_system.h"
#include "io/memory_file_system.h"
#include "vlog/segment_edit.h"
#include "vlog/segment_reader.h"
#include "vlog/segment_writer.h"
#include "vlog/vlog_format.h"

namespace cairn {
namespace {

std::string SegmentPath(uint64_t id) { return absl::StrFormat("/db/%06d.vlog", id); }

// A value of random bytes (incompressible), or of one repeated byte.
std::string MakeValue(std::mt19937_64& rng, size_t size, bool compressible) {
  std::string v(size, '\0');
  const char fill = static_cast<char>('a' + rng() % 26);
  for (char& c : v) c = compressible ? fill : static_cast<char>(rng());
  return v;
}

class FlushSegmentsTest : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override { ASSERT_TRUE(fs_->CreateDir("/db").ok()); }

  FlushSegments::Create Creator(io::FileSystem* fs) {
    return [this, fs]() -> absl::StatusOr<std::unique_ptr<vlog::SegmentWriter>> {
      const uint64_t id = next_id_++;
      vlog::SegmentWriterOptions o;
      o.compress = GetParam();
      o.compression_level = 1;
      o.chunk_size = 16 << 10;
      o.sync_header = false;
      return vlog::SegmentWriter::Create(fs, SegmentPath(id), id, o);
    };
  }

  std::shared_ptr<io::MemoryFileSystem> fs_ = std::make_shared<io::MemoryFileSystem>();
  uint64_t next_id_ = 10;
};

TEST_P(FlushSegmentsTest, PlacesHandedOutAreWhereTheRecordsLand) {
  std::mt19937_64 rng(7);
  FlushSegments segments(fs_.get(), Creator(fs_.get()), /*segment_size=*/1 << 20);
  struct Placed {
    std::string key, value;
    vlog::ValuePointer ptr;
  };
  std::vector<Placed> placed;
  // About 6 MiB: several staging writes per segment and several segments;
  // values up to 40 KiB, so some are chunked (16 KiB chunks).
  for (int i = 0; i < 600; ++i) {
    Placed p;
    p.key = absl::StrFormat("key%05d", i);
    const size_t size = rng() % 3 == 0 ? rng() % (40 << 10) : rng() % 8192;
    p.value = MakeValue(rng, size, /*compressible=*/rng() % 2 == 0);
    auto ptr = segments.Place(p.key, p.value);
    ASSERT_TRUE(ptr.ok()) << ptr.status();
    p.ptr = *ptr;
    placed.push_back(std::move(p));
  }
  ASSERT_TRUE(segments.Finish().ok());
  vlog::SegmentEdit edit;
  segments.AddTo(&edit);

  // Each segment is its records, back to back, and nothing else.
  std::map<uint64_t, uint64_t> ends, records;
  for (const Placed& p : placed) {
    uint64_t& end = ends.try_emplace(p.ptr.segment_id, vlog::kSegmentHeaderSize).first->second;
    EXPECT_EQ(p.ptr.offset, end) << p.key;
    end = p.ptr.offset + p.ptr.size;
    ++records[p.ptr.segment_id];
  }
  EXPECT_GE(ends.size(), 3u);
  for (const auto& [id, end] : ends) {
    auto size = fs_->GetFileSize(SegmentPath(id));
    ASSERT_TRUE(size.ok()) << size.status();
    EXPECT_EQ(*size, end) << id;
  }
  // The edit adds and seals each, in order, at its size and record count.
  std::vector<vlog::SegmentEdit::Change> expected;
  for (const auto& [id, end] : ends) {
    expected.push_back({.tag = vlog::SegmentEditTag::kNewSegment, .segment_id = id});
    expected.push_back({.tag = vlog::SegmentEditTag::kSealSegment,
                        .segment_id = id,
                        .bytes = end,
                        .records = records[id]});
  }
  EXPECT_EQ(edit.changes(), expected);
  // Every value reads back through its pointer, checksum checked.
  std::map<uint64_t, std::unique_ptr<vlog::SegmentReader>> readers;
  for (const Placed& p : placed) {
    auto& reader = readers[p.ptr.segment_id];
    if (reader == nullptr) {
      auto opened = vlog::SegmentReader::Open(fs_.get(), SegmentPath(p.ptr.segment_id),
                                              p.ptr.segment_id, /*direct_reads=*/false);
      ASSERT_TRUE(opened.ok()) << opened.status();
      reader = std::move(*opened);
    }
    std::string value;
    ASSERT_TRUE(reader->Read(p.ptr, p.key, &value).ok()) << p.key;
    ASSERT_EQ(value, p.value) << p.key;
  }
}

TEST_P(FlushSegmentsTest, AFailedWriteIsReportedAndAbandonLeavesNoFile) {
  auto fault = std::make_shared<io::FaultFileSystem>(fs_);
  FlushSegments segments(fault.get(), Creator(fault.get()), /*segment_size=*/1 << 20);
  std::mt19937_64 rng(11);
  // The staging write of the first mebibyte fails (the header's append is
  // the segment's first write).
  fault->FailAfter(1, io::InjectedIoError("staging write"), io::FaultKind::kAnyWrite, /*persistent=*/true);
  absl::Status failed;
  for (int i = 0; i < 400 && failed.ok(); ++i) {
    failed = segments.Place(absl::StrFormat("key%05d", i), MakeValue(rng, 4096, /*compressible=*/false)).status();
  }
  EXPECT_FALSE(failed.ok());
  EXPECT_NE(failed.message().find("staging write"), std::string::npos) << failed;
  segments.Abandon();
  auto files = fs_->ListDir("/db");
  ASSERT_TRUE(files.ok());
  EXPECT_TRUE(files->empty()) << (*files)[0];
}

TEST_P(FlushSegmentsTest, RecordsPastTheLimitsAreRefused) {
  FlushSegments segments(fs_.get(), Creator(fs_.get()), /*segment_size=*/1 << 20);
  const std::string key(vlog::kMaxRecordKeySize + 1, 'k');
  EXPECT_TRUE(absl::IsInvalidArgument(segments.Place(key, "v").status()));
  ASSERT_TRUE(segments.Finish().ok());
}

INSTANTIATE_TEST_SUITE_P(Encoding, FlushSegmentsTest, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return info.param ? std::string("zstd") : std::string("plain");
                         });

}  // namespace
}  // namespace cairn
