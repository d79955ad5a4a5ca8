#include "gc/victim_picker.h"

#include <vector>

#include "gtest/gtest.h"
#include "vlog/segment_edit.h"
#include "vlog/segment_set.h"

namespace cairn::gc {
namespace {

// A sealed segment of size bytes with garbage bytes of garbage.
vlog::SegmentInfo Sealed(uint64_t id, uint64_t size, uint64_t garbage) {
  vlog::SegmentInfo s;
  s.segment_id = id;
  s.sealed = true;
  s.size = size;
  s.records = size / 100;
  s.garbage_bytes = garbage;
  s.garbage_records = garbage / 100;
  return s;
}

std::vector<uint64_t> Ids(const std::vector<VictimCandidate>& candidates) {
  std::vector<uint64_t> ids;
  for (const VictimCandidate& c : candidates) ids.push_back(c.segment_id);
  return ids;
}

TEST(VictimPickerTest, ScoreIsCostBenefitOfGarbageAndAge) {
  // u = 0.5: (1 - u) * (1 + age) / (1 + u).
  EXPECT_DOUBLE_EQ(VictimPicker::Score(0.5, 0), 0.5 / 1.5);
  EXPECT_DOUBLE_EQ(VictimPicker::Score(0.5, 9), 0.5 * 10 / 1.5);
  EXPECT_DOUBLE_EQ(VictimPicker::Score(1.0, 0), 1.0);  // all garbage: nothing to copy
  EXPECT_DOUBLE_EQ(VictimPicker::Score(0.0, 100), 0.0);
  EXPECT_LT(VictimPicker::Score(0.6, 5), VictimPicker::Score(0.7, 5));
  EXPECT_LT(VictimPicker::Score(0.6, 5), VictimPicker::Score(0.6, 6));
}

TEST(VictimPickerTest, RanksByScoreBestFirst) {
  const std::vector<vlog::SegmentInfo> segs = {
      Sealed(1, 1000, 600), Sealed(2, 1000, 900), Sealed(3, 1000, 750)};
  PickRequest req;
  req.segments = segs;
  req.age = [](const vlog::SegmentInfo&) { return 1.0; };  // equal ages: garbage decides
  const std::vector<VictimCandidate> ranked = VictimPicker().Rank(req);
  EXPECT_EQ(Ids(ranked), (std::vector<uint64_t>{2, 3, 1}));
  EXPECT_GT(ranked[0].score, ranked[1].score);
  EXPECT_DOUBLE_EQ(ranked[0].garbage_ratio, 0.9);
  EXPECT_EQ(ranked[0].live_bytes, 100u);
  EXPECT_EQ(ranked[0].size, 1000u);
}

TEST(VictimPickerTest, SegmentsBelowTheRatioFloorAreNeverPicked) {
  const std::vector<vlog::SegmentInfo> segs = {
      Sealed(1, 1000, 499), Sealed(2, 1000, 500), Sealed(3, 1000, 0), Sealed(4, 1000, 300)};
  PickRequest req;
  req.segments = segs;
  EXPECT_EQ(Ids(VictimPicker().Rank(req)), (std::vector<uint64_t>{2}));  // floor is inclusive
  // Segment 1 (49.9%, age 3) outscores segment 2 (50%, age 2).
  EXPECT_EQ(Ids(VictimPicker({.min_garbage_ratio = 0.3}).Rank(req)),
            (std::vector<uint64_t>{1, 2, 4}));
  // Even a floor of 0 does not pick a segment without garbage.
  EXPECT_EQ(VictimPicker({.min_garbage_ratio = 0.0}).Rank(req).size(), 3u);
  EXPECT_FALSE(VictimPicker({.min_garbage_ratio = 0.6}).PickOne(req).has_value());
}

TEST(VictimPickerTest, UnsealedObsoleteAndExcludedSegmentsAreNeverPicked) {
  vlog::SegmentInfo active;  // receiving fresh writes: not sealed, size 0
  active.segment_id = 10;
  active.garbage_bytes = 5000;  // garbage can arrive before the seal
  vlog::SegmentInfo obsolete = Sealed(3, 1000, 1000);
  obsolete.obsolete = true;
  const std::vector<vlog::SegmentInfo> segs = {active, obsolete, Sealed(4, 1000, 950),
                                               Sealed(5, 1000, 800)};
  PickRequest req;
  req.segments = segs;
  EXPECT_EQ(Ids(VictimPicker().Rank(req)), (std::vector<uint64_t>{4, 5}));
  req.exclude = {4};
  EXPECT_EQ(VictimPicker().PickOne(req)->segment_id, 5u);
  req.exclude = {4, 5};
  EXPECT_FALSE(VictimPicker().PickOne(req).has_value());
  EXPECT_TRUE(VictimPicker().Pick(req).empty());
}

TEST(VictimPickerTest, OlderSegmentsScoreHigherAtEqualGarbage) {
  // Default age: newest id (the active segment, 20) minus the id.
  vlog::SegmentInfo active;
  active.segment_id = 20;
  const std::vector<vlog::SegmentInfo> segs = {active, Sealed(19, 1000, 600),
                                               Sealed(2, 1000, 600), Sealed(12, 1000, 600)};
  PickRequest req;
  req.segments = segs;
  const std::vector<VictimCandidate> ranked = VictimPicker().Rank(req);
  EXPECT_EQ(Ids(ranked), (std::vector<uint64_t>{2, 12, 19}));
  EXPECT_DOUBLE_EQ(ranked[0].age, 18);
  EXPECT_DOUBLE_EQ(ranked[2].age, 1);
}

TEST(VictimPickerTest, AgeCanOutweighGarbage) {
  vlog::SegmentInfo active;
  active.segment_id = 100;
  // Old segment with 60% garbage against a young one with 90%.
  const std::vector<vlog::SegmentInfo> segs = {active, Sealed(10, 1000, 600),
                                               Sealed(99, 1000, 900)};
  PickRequest req;
  req.segments = segs;
  // (0.6 * 91 / 1.4 = 39) beats (0.9 * 2 / 1.1 = 1.6).
  EXPECT_EQ(VictimPicker().PickOne(req)->segment_id, 10u);
  // A caller-provided age (time since the last write, say) overrides ids.
  req.age = [](const vlog::SegmentInfo& s) { return s.segment_id == 99 ? 50.0 : 1.0; };
  EXPECT_EQ(VictimPicker().PickOne(req)->segment_id, 99u);
}

TEST(VictimPickerTest, PickStaysWithinTheByteBudgetButReturnsAtLeastOne) {
  vlog::SegmentInfo active;
  active.segment_id = 50;
  const std::vector<vlog::SegmentInfo> segs = {active, Sealed(1, 4000, 3600),
                                               Sealed(2, 1000, 800), Sealed(3, 3000, 2400),
                                               Sealed(4, 1000, 700)};
  PickRequest req;
  req.segments = segs;
  EXPECT_EQ(Ids(VictimPicker().Rank(req)), (std::vector<uint64_t>{1, 2, 3, 4}));
  EXPECT_EQ(Ids(VictimPicker().Pick(req)), (std::vector<uint64_t>{1}));  // budget 0: one
  req.byte_budget = 100;  // smaller than any segment: still the best one
  EXPECT_EQ(Ids(VictimPicker().Pick(req)), (std::vector<uint64_t>{1}));
  req.byte_budget = 6000;  // 1 (4000) + 2 (1000) fit; 3 (3000) does not; 4 (1000) does
  EXPECT_EQ(Ids(VictimPicker().Pick(req)), (std::vector<uint64_t>{1, 2, 4}));
  req.byte_budget = 1u << 30;
  EXPECT_EQ(VictimPicker().Pick(req).size(), 4u);
}

TEST(VictimPickerTest, WorksOnASegmentSetBuiltFromEdits) {
  vlog::SegmentSet set;
  vlog::SegmentEdit edit;
  edit.AddSegment(5, vlog::SegmentKind::kFresh);
  edit.SealSegment(5, 10000, 100);
  edit.AddGarbage(5, 7000, 70);
  edit.AddSegment(6, vlog::SegmentKind::kGcOutput);
  edit.SealSegment(6, 10000, 100);
  edit.AddGarbage(6, 8000, 80);
  edit.MarkObsolete(6);
  edit.AddSegment(7, vlog::SegmentKind::kFresh);  // active
  edit.AddGarbage(7, 100, 1);
  ASSERT_TRUE(set.Apply(edit).ok());
  const std::vector<vlog::SegmentInfo> segs = set.Segments();
  PickRequest req;
  req.segments = segs;
  const std::optional<VictimCandidate> pick = VictimPicker().PickOne(req);
  ASSERT_TRUE(pick.has_value());
  EXPECT_EQ(pick->segment_id, 5u);
  EXPECT_DOUBLE_EQ(pick->age, 2);
  EXPECT_EQ(VictimPicker().Rank(req).size(), 1u);
}

TEST(VictimPickerTest, SmallSegmentsAreMergedOnlyFromEightOnOldestFirst) {
  constexpr uint64_t kTarget = 64000;  // small: under 4000 bytes
  vlog::SegmentInfo active;  // unsealed, tiny: never taken
  active.segment_id = 100;
  active.size = 500;
  std::vector<vlog::SegmentInfo> segs = {active, Sealed(2, 4000, 0),  // not small
                                         Sealed(3, 64000, 0)};
  // Seven small ones, out of id order, one of them with some garbage.
  for (uint64_t id : {40, 11, 30, 12, 50, 13, 20}) segs.push_back(Sealed(id, 1000, 0));
  segs.back().garbage_bytes = 300;
  PickRequest req;
  req.segments = segs;
  EXPECT_TRUE(VictimPicker::PickSmall(req, kTarget).empty());  // 7: too few

  segs.push_back(Sealed(60, 3999, 0));  // the eighth, just under a sixteenth
  req.segments = segs;
  std::vector<VictimCandidate> picked = VictimPicker::PickSmall(req, kTarget);
  EXPECT_EQ(Ids(picked), (std::vector<uint64_t>{11, 12, 13, 20, 30, 40, 50, 60}));
  EXPECT_DOUBLE_EQ(picked[3].garbage_ratio, 0.3);
  EXPECT_EQ(picked[3].live_bytes, 700u);

  // Obsolete and excluded (claimed) ones do not count, nor are taken.
  segs.push_back(Sealed(70, 1000, 0));
  segs.push_back(Sealed(71, 1000, 0));
  segs.back().obsolete = true;
  req.segments = segs;
  req.exclude = {11, 12};
  EXPECT_TRUE(VictimPicker::PickSmall(req, kTarget).empty());  // 13..60, 70: 7
  req.exclude = {11};
  EXPECT_EQ(Ids(VictimPicker::PickSmall(req, kTarget)),
            (std::vector<uint64_t>{12, 13, 20, 30, 40, 50, 60, 70}));

  // A smaller target: small is under 3000 now, so 60 is not.
  req.exclude = {};
  picked = VictimPicker::PickSmall(req, 48000);
  EXPECT_EQ(Ids(picked), (std::vector<uint64_t>{11, 12, 13, 20, 30, 40, 50, 70}));
  for (uint64_t id = 200; id < 214; ++id) segs.push_back(Sealed(id, 2900, 0));
  req.segments = segs;
  // At most one target size in all, the oldest first: 8 x 1000 + 13 x 2900.
  std::vector<uint64_t> want = {11, 12, 13, 20, 30, 40, 50, 70};
  for (uint64_t id = 200; id < 213; ++id) want.push_back(id);
  EXPECT_EQ(Ids(VictimPicker::PickSmall(req, 48000)), want);
  // The ratio floor plays no part; the ordinary picker takes none of them.
  EXPECT_TRUE(VictimPicker().Rank(req).empty());
}

// Merge outputs stop being small at a sixteenth of the target; once the
// sealed segments outnumber kCrowdedBase plus kCrowdedPerTarget per target
// of live bytes, segments under half the target are merged too, so that
// short runs of mid-sized values do not leave one file per sixteenth.
TEST(VictimPickerTest, CrowdedSegmentsUnderHalfTheTargetAreMergedToo) {
  constexpr uint64_t kTarget = 64000;
  std::vector<vlog::SegmentInfo> segs;
  // 28 segments of 5000 bytes (over a sixteenth): 140000 live bytes, three
  // targets' worth, so crowded only past 24 + 2 * 3 = 30.
  for (uint64_t id = 1; id <= 28; ++id) segs.push_back(Sealed(id, 5000, 0));
  PickRequest req;
  req.segments = segs;
  EXPECT_TRUE(VictimPicker::PickSmall(req, kTarget).empty()) << "28: not crowded";
  segs.push_back(Sealed(29, 5000, 0));
  segs.push_back(Sealed(30, 5000, 0));
  segs.push_back(Sealed(31, 40000, 0));  // over half the target: never taken
  req.segments = segs;
  // 31 sealed over three targets of live bytes: crowded. The smallest
  // first (then the oldest), within a quarter target: 3 of 5000 bytes.
  segs[9].size = 4500;
  req.segments = segs;
  EXPECT_EQ(Ids(VictimPicker::PickSmall(req, kTarget)), (std::vector<uint64_t>{10, 1, 2}));
  // Garbage counts against the live bytes: 27 of them, three quarters
  // garbage, hold one target's worth and are crowded past 26.
  for (vlog::SegmentInfo& s : segs) s.garbage_bytes = s.size / 4 * 3;
  segs.resize(27);
  req.segments = segs;
  EXPECT_EQ(VictimPicker::PickSmall(req, kTarget).size(), 3u);
  // Eight under a sixteenth come first, oldest first, whatever the crowd.
  for (uint64_t id = 40; id < 48; ++id) segs.push_back(Sealed(id, 1000, 0));
  req.segments = segs;
  EXPECT_EQ(Ids(VictimPicker::PickSmall(req, kTarget)),
            (std::vector<uint64_t>{40, 41, 42, 43, 44, 45, 46, 47}));
}

TEST(VictimPickerTest, ValidateRejectsRatiosOutsideZeroToOne) {
  EXPECT_TRUE(VictimPicker::Validate({}).ok());
  EXPECT_TRUE(VictimPicker::Validate({.min_garbage_ratio = 0}).ok());
  EXPECT_TRUE(VictimPicker::Validate({.min_garbage_ratio = 1}).ok());
  EXPECT_TRUE(absl::IsInvalidArgument(VictimPicker::Validate({.min_garbage_ratio = -0.1})));
  EXPECT_TRUE(absl::IsInvalidArgument(VictimPicker::Validate({.min_garbage_ratio = 1.5})));
}

}  // namespace
}  // namespace cairn::gc
