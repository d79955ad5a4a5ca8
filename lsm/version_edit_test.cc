#include "lsm/version_edit.h"

#include <fstream>
#include <sstream>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "io/coding.h"

namespace cairn::lsm {
namespace {

using ::testing::HasSubstr;

std::string IKey(std::string_view user_key, SequenceNumber seq,
                 ValueType type = ValueType::kValue) {
  std::string k;
  AppendInternalKey(&k, user_key, seq, type);
  return k;
}

FileMetaData File(uint64_t number, uint64_t size, std::string_view smallest,
                  SequenceNumber smallest_seq, std::string_view largest,
                  SequenceNumber largest_seq, uint64_t entries) {
  FileMetaData f;
  f.number = number;
  f.file_size = size;
  f.smallest = IKey(smallest, smallest_seq);
  f.largest = IKey(largest, largest_seq);
  f.smallest_seq = smallest_seq;
  f.largest_seq = largest_seq;
  f.num_entries = entries;
  return f;
}

// The worked example of docs/manifest_format.md: a manifest's first record.
VersionEdit GoldenEdit() {
  VersionEdit e;
  e.SetComparatorName(kComparatorName);
  e.SetLogNumber(5);
  e.SetNextFileNumber(8);
  e.SetLastSequence(100);
  e.AddFile(1, File(6, 4096, "apple", 1, "pear", 100, 50));
  e.AddExtension(1, "seg7");
  return e;
}

VersionEdit FullEdit() {
  VersionEdit e;
  e.SetComparatorName(kComparatorName);
  e.SetLogNumber(12);
  e.SetNextFileNumber(40);
  e.SetLastSequence(kMaxSequenceNumber);
  e.SetCompactPointer(2, IKey("m", 7));
  e.SetCompactPointer(6, IKey("", 0, ValueType::kDeletion));
  e.RemoveFile(3, 17);
  e.RemoveFile(0, 9);
  e.AddFile(0, File(30, 1 << 20, "a", 3, "z", 90, 1000));
  e.AddFile(6, File(31, uint64_t{1} << 40, std::string("\0\xff", 2), 0, "zz", 5, 2));
  e.AddExtension(7, "");
  e.AddExtension(1, std::string(300, 'x'));
  e.AddExtension(0xffffffffu, std::string("\0bin\0", 5));
  return e;
}

std::string Encode(const VersionEdit& e) {
  std::string s;
  e.EncodeTo(&s);
  return s;
}

void ExpectSameFile(const FileMetaData& a, const FileMetaData& b) {
  EXPECT_EQ(a.number, b.number);
  EXPECT_EQ(a.file_size, b.file_size);
  EXPECT_EQ(a.smallest, b.smallest);
  EXPECT_EQ(a.largest, b.largest);
  EXPECT_EQ(a.smallest_seq, b.smallest_seq);
  EXPECT_EQ(a.largest_seq, b.largest_seq);
  EXPECT_EQ(a.num_entries, b.num_entries);
}

TEST(VersionEditTest, RoundTripKeepsEveryFieldAndExtensionOrder) {
  const VersionEdit original = FullEdit();
  const std::string encoded = Encode(original);
  VersionEdit decoded;
  ASSERT_TRUE(decoded.DecodeFrom(encoded).ok());

  EXPECT_EQ(decoded.comparator_name(), std::string(kComparatorName));
  EXPECT_EQ(decoded.log_number(), 12u);
  EXPECT_EQ(decoded.next_file_number(), 40u);
  EXPECT_EQ(decoded.last_sequence(), kMaxSequenceNumber);
  EXPECT_EQ(decoded.compact_pointers(), original.compact_pointers());
  EXPECT_EQ(decoded.deleted_files(), original.deleted_files());
  ASSERT_EQ(decoded.new_files().size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(decoded.new_files()[i].first, original.new_files()[i].first);
    ExpectSameFile(decoded.new_files()[i].second, original.new_files()[i].second);
  }
  ASSERT_EQ(decoded.extensions().size(), 3u);
  EXPECT_EQ(decoded.extensions(), original.extensions());
  EXPECT_EQ(decoded.extensions()[0].first, 7u);
  EXPECT_EQ(decoded.extensions()[2].second, std::string("\0bin\0", 5));
  EXPECT_EQ(Encode(decoded), encoded);
}

TEST(VersionEditTest, EmptyEditEncodesOnlyTheFormatVersion) {
  const std::string encoded = Encode(VersionEdit());
  EXPECT_EQ(encoded, std::string("\x01\x01", 2));
  VersionEdit decoded;
  ASSERT_TRUE(decoded.DecodeFrom(encoded).ok());
  EXPECT_FALSE(decoded.log_number().has_value());
  EXPECT_FALSE(decoded.comparator_name().has_value());
  EXPECT_TRUE(decoded.new_files().empty());
  EXPECT_TRUE(decoded.extensions().empty());
}

TEST(VersionEditTest, DeletedFilesAreDeduplicatedAndSorted) {
  VersionEdit a, b;
  a.RemoveFile(2, 5);
  a.RemoveFile(1, 9);
  a.RemoveFile(2, 5);
  b.RemoveFile(1, 9);
  b.RemoveFile(2, 5);
  EXPECT_EQ(a.deleted_files().size(), 2u);
  EXPECT_EQ(Encode(a), Encode(b));
}

TEST(VersionEditTest, ClearEmptiesTheEdit) {
  VersionEdit e = FullEdit();
  e.Clear();
  EXPECT_EQ(Encode(e), Encode(VersionEdit()));
}

// Reads the hex between the golden markers of docs/manifest_format.md. Each
// line holds hex byte pairs, then optionally '#' and a note.
std::string GoldenBytesFromDoc() {
  std::ifstream in(std::string(CAIRN_SOURCE_DIR) + "/docs/manifest_format.md");
  EXPECT_TRUE(in.good()) << "docs/manifest_format.md missing";
  std::string line, bytes;
  bool inside = false, seen_end = false;
  while (std::getline(in, line)) {
    if (line.find("golden:first-record:begin") != std::string::npos) {
      inside = true;
      continue;
    }
    if (line.find("golden:first-record:end") != std::string::npos) {
      seen_end = inside;
      break;
    }
    if (!inside || absl::StartsWith(line, "```")) continue;
    const absl::string_view hex = absl::string_view(line).substr(0, line.find('#'));
    for (absl::string_view token : absl::StrSplit(hex, ' ', absl::SkipWhitespace())) {
      EXPECT_EQ(token.size(), 2u) << "bad hex token '" << token << "' in: " << line;
      EXPECT_TRUE(absl::ascii_isxdigit(token[0]) && absl::ascii_isxdigit(token[1]))
          << "bad hex token '" << token << "' in: " << line;
      bytes += absl::HexStringToBytes(token);
    }
  }
  EXPECT_TRUE(seen_end) << "golden markers not found in docs/manifest_format.md";
  return bytes;
}

TEST(VersionEditTest, GoldenFirstRecordMatchesTheFormatDoc) {
  const std::string golden = GoldenBytesFromDoc();
  const std::string encoded = Encode(GoldenEdit());
  EXPECT_EQ(absl::BytesToHexString(encoded), absl::BytesToHexString(golden))
      << GoldenEdit().DebugString();

  VersionEdit decoded;
  ASSERT_TRUE(decoded.DecodeFrom(golden).ok());
  EXPECT_EQ(Encode(decoded), encoded);
}

TEST(VersionEditTest, EveryTruncationIsDataLossOrAValidPrefix) {
  const std::string encoded = Encode(FullEdit());
  int errors = 0;
  for (size_t n = 0; n < encoded.size(); ++n) {
    VersionEdit e;
    absl::Status s = e.DecodeFrom(std::string_view(encoded).substr(0, n));
    if (s.ok()) {
      // A cut on a field boundary is a shorter valid edit: it must re-encode
      // to exactly the prefix.
      EXPECT_EQ(Encode(e), encoded.substr(0, n)) << "cut at " << n;
    } else {
      ++errors;
      EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss) << s;
      EXPECT_THAT(s.message(), HasSubstr("version edit")) << s;
      EXPECT_TRUE(e.new_files().empty() && e.extensions().empty()) << "cut at " << n;
    }
  }
  EXPECT_GT(errors, static_cast<int>(encoded.size()) / 2);
}

TEST(VersionEditTest, EveryByteFlipDecodesCleanlyOrFails) {
  const std::string encoded = Encode(FullEdit());
  int errors = 0, total = 0;
  for (size_t i = 0; i < encoded.size(); ++i) {
    for (int mask : {0x01, 0x02, 0x04, 0x08, 0x10, 0x20, 0x40, 0x80, 0xff}) {
      std::string bad = encoded;
      bad[i] = static_cast<char>(bad[i] ^ mask);
      VersionEdit e;
      absl::Status s = e.DecodeFrom(bad);
      ++total;
      if (s.ok()) {
        // Still well formed (say, another number): it must survive a round
        // trip of its own.
        const std::string again = Encode(e);
        VersionEdit e2;
        ASSERT_TRUE(e2.DecodeFrom(again).ok()) << "flip " << mask << " at " << i;
        EXPECT_EQ(Encode(e2), again);
      } else {
        ++errors;
        EXPECT_TRUE(s.code() == absl::StatusCode::kDataLoss ||
                    s.code() == absl::StatusCode::kFailedPrecondition)
            << s;
      }
    }
  }
  // About a tenth of the flips are refused; since the expiring value types
  // 4 and 5 (2026-12-07) a flip of a file's key type to one of them decodes
  // too, which took the share just under a tenth (394 of 3980).
  EXPECT_GT(errors, total / 12);
}

TEST(VersionEditTest, UnknownTagIsDataLoss) {
  std::string encoded = Encode(GoldenEdit());
  io::PutVarint32(&encoded, 99);
  VersionEdit e;
  absl::Status s = e.DecodeFrom(encoded);
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(s.message(), HasSubstr("unknown tag 99"));
}

TEST(VersionEditTest, NewerFormatVersionIsRefused) {
  std::string encoded;
  io::PutVarint32(&encoded, static_cast<uint32_t>(EditTag::kFormatVersion));
  io::PutVarint32(&encoded, kManifestFormatVersion + 1);
  io::PutVarint32(&encoded, 200);  // A tag from the future: never reached.
  VersionEdit e;
  absl::Status s = e.DecodeFrom(encoded);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(s.message(), HasSubstr("format version 2"));
}

TEST(VersionEditTest, MissingFormatVersionIsDataLoss) {
  std::string encoded;
  io::PutVarint32(&encoded, static_cast<uint32_t>(EditTag::kLogNumber));
  io::PutVarint64(&encoded, 3);
  VersionEdit e;
  absl::Status s = e.DecodeFrom(encoded);
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(s.message(), HasSubstr("format version"));
  EXPECT_EQ(e.DecodeFrom("").code(), absl::StatusCode::kDataLoss);
}

TEST(VersionEditTest, LevelOutOfRangeIsDataLoss) {
  std::string encoded = Encode(VersionEdit());
  io::PutVarint32(&encoded, static_cast<uint32_t>(EditTag::kDeletedFile));
  io::PutVarint32(&encoded, kNumLevels);
  io::PutVarint64(&encoded, 4);
  VersionEdit e;
  absl::Status s = e.DecodeFrom(encoded);
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(s.message(), HasSubstr("deleted file at byte 2"));
}

TEST(VersionEditTest, FileKeysMustBeOrderedInternalKeys) {
  VersionEdit reversed;
  FileMetaData f = File(3, 10, "z", 1, "a", 1, 1);
  reversed.AddFile(1, f);
  VersionEdit e;
  EXPECT_EQ(e.DecodeFrom(Encode(reversed)).code(), absl::StatusCode::kDataLoss);

  VersionEdit short_key;
  f = File(3, 10, "a", 1, "b", 1, 1);
  f.largest = "short";  // Under 8 bytes: not an internal key.
  short_key.AddFile(1, f);
  absl::Status s = e.DecodeFrom(Encode(short_key));
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(s.message(), HasSubstr("new file"));
}

TEST(VersionEditTest, DebugStringNamesEveryField) {
  const std::string s = FullEdit().DebugString();
  EXPECT_THAT(s, HasSubstr("comparator: cairn.bytewise"));
  EXPECT_THAT(s, HasSubstr("log number: 12"));
  EXPECT_THAT(s, HasSubstr("next file number: 40"));
  EXPECT_THAT(s, HasSubstr("compact pointer: L2 'm' @ 7"));
  EXPECT_THAT(s, HasSubstr("delete file: L3 #17"));
  EXPECT_THAT(s, HasSubstr("add file: L0 #30 1048576 bytes"));
  EXPECT_THAT(s, HasSubstr("extension: tag 1, 300 bytes"));
}

}  // namespace
// Tag 10 (2026-12-07): a table's range tombstone count follows its new-file
// field and round-trips; out of place it is DataLoss.
TEST(VersionEditTest, FileRangeDeletionsRoundTripAfterTheirFile) {
  VersionEdit edit;
  FileMetaData f;
  f.number = 7;
  f.file_size = 100;
  AppendInternalKey(&f.smallest, "a", 1, ValueType::kValue);
  AppendInternalKey(&f.largest, "z", kMaxSequenceNumber, kValueTypeForSeek);
  f.num_range_deletions = 3;
  edit.AddFile(1, f);
  f.number = 8;
  f.num_range_deletions = 0;
  edit.AddFile(1, f);
  std::string encoded;
  edit.EncodeTo(&encoded);
  VersionEdit decoded;
  ASSERT_TRUE(decoded.DecodeFrom(encoded).ok());
  ASSERT_EQ(decoded.new_files().size(), 2u);
  EXPECT_EQ(decoded.new_files()[0].second.num_range_deletions, 3u);
  EXPECT_EQ(decoded.new_files()[1].second.num_range_deletions, 0u);
  // A tag 10 naming a file no tag 8 just added.
  std::string bad;
  VersionEdit empty;
  empty.EncodeTo(&bad);
  bad += std::string("\x0a\x01\x07\x03", 4);
  EXPECT_TRUE(absl::IsDataLoss(decoded.DecodeFrom(bad)));
}

}  // namespace cairn::lsm
