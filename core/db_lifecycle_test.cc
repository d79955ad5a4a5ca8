// DB::Close (a status, twice is fine, calls after it refuse) and DestroyDB
// (deletes a database and nothing else; refuses an open one).
#include <memory>
#include <string>

#include "cairn/db.h"
#include "core/db_impl.h"
#include "gtest/gtest.h"
#include "io/fault_file_system.h"
#include "io/memory_file_system.h"
#include "io/testing/status_matchers.h"
#include "lsm/filename.h"

namespace cairn {
namespace {

class LifecycleTest : public ::testing::Test {
 protected:
  void SetUp() override { fs_ = std::make_shared<io::MemoryFileSystem>(); }

  std::unique_ptr<DB> Open() {
    Options o;
    o.value_separation_threshold = 1024;  // "a" below is separated
    auto db = OpenWithFileSystem(o, "/db", fs_);
    EXPECT_OK(db);
    return db.ok() ? *std::move(db) : nullptr;
  }

  std::shared_ptr<io::MemoryFileSystem> fs_;
};

void ExpectClosed(const absl::Status& s) {
  EXPECT_TRUE(absl::IsFailedPrecondition(s)) << s;
  EXPECT_NE(s.message().find("closed"), std::string_view::npos) << s;
}

TEST_F(LifecycleTest, CloseMakesWritesDurableAndLaterCallsRefuse) {
  std::unique_ptr<DB> db = Open();
  ASSERT_NE(db, nullptr);
  ASSERT_OK(db->Put({}, "a", std::string(2000, 'v')));  // separated
  ASSERT_OK(db->Put({}, "b", "inline"));
  ASSERT_OK(db->Close());
  ASSERT_OK(db->Close());  // twice is fine
  ExpectClosed(db->Put({}, "c", "v"));
  ExpectClosed(db->Flush());
  ExpectClosed(db->CompactRange(nullptr, nullptr));
  ExpectClosed(db->RunGC().status());
  ExpectClosed(db->WaitForBackgroundWork());
  std::string v;
  ExpectClosed(db->Get({}, "a", &v));
  std::vector<std::string> values;
  for (const absl::Status& s : db->MultiGet({}, {"a", "b"}, &values)) ExpectClosed(s);
  auto it = db->NewIterator({});
  it->SeekToFirst();
  EXPECT_FALSE(it->Valid());
  ExpectClosed(it->status());
  EXPECT_EQ(db->GetSnapshot(), nullptr);
  EXPECT_FALSE(db->GetProperty("cairn.stats", &v));
  db.reset();  // the destructor after Close does nothing more

  db = Open();
  ASSERT_NE(db, nullptr);
  ASSERT_OK(db->Get({}, "a", &v));
  EXPECT_EQ(v, std::string(2000, 'v'));
  ASSERT_OK(db->Get({}, "b", &v));
  EXPECT_EQ(v, "inline");
}

TEST_F(LifecycleTest, CloseReportsAFailedFinalSync) {
  auto faulty = std::make_shared<io::FaultFileSystem>(fs_);
  auto db = OpenWithFileSystem(Options(), "/db", faulty);
  ASSERT_OK(db);
  ASSERT_OK((*db)->Put({}, "a", "v"));
  faulty->FailAfter(0, io::InjectedIoError("final sync"), io::FaultKind::kSync,
                    /*persistent=*/true);
  absl::Status s = (*db)->Close();
  EXPECT_FALSE(s.ok());
  EXPECT_EQ((*db)->Close(), s);  // the second Close says the same
}

TEST_F(LifecycleTest, DestroyDBDeletesTheDatabaseAndItsDirectory) {
  std::unique_ptr<DB> db = Open();
  ASSERT_NE(db, nullptr);
  ASSERT_OK(db->Put({}, "a", std::string(2000, 'v')));
  ASSERT_OK(db->Flush());
  ASSERT_OK(db->Close());
  db.reset();
  ASSERT_OK(DestroyDBWithFileSystem("/db", fs_.get()));
  EXPECT_FALSE(fs_->FileExists("/db"));
  EXPECT_TRUE(absl::IsNotFound(DestroyDBWithFileSystem("/db", fs_.get())));
}

TEST_F(LifecycleTest, DestroyDBRefusesAnOpenDatabaseAndDeletesNothing) {
  std::unique_ptr<DB> db = Open();
  ASSERT_NE(db, nullptr);
  ASSERT_OK(db->Put({}, "a", "v"));
  const auto before = fs_->ListDir("/db");
  ASSERT_OK(before);
  absl::Status s = DestroyDBWithFileSystem("/db", fs_.get());
  EXPECT_TRUE(absl::IsFailedPrecondition(s)) << s;
  EXPECT_NE(s.message().find("open"), std::string_view::npos) << s;
  EXPECT_EQ(*fs_->ListDir("/db"), *before);
  std::string v;
  ASSERT_OK(db->Get({}, "a", &v));
}

TEST_F(LifecycleTest, DestroyDBRefusesADirectoryThatIsNotADatabase) {
  ASSERT_OK(fs_->CreateDir("/photos"));
  {
    auto f = fs_->NewWritableFile("/photos/cat.jpg", {});
    ASSERT_OK(f);
    ASSERT_OK((*f)->Append("jpeg"));
    ASSERT_OK((*f)->Close());
  }
  absl::Status s = DestroyDBWithFileSystem("/photos", fs_.get());
  EXPECT_TRUE(absl::IsFailedPrecondition(s)) << s;
  EXPECT_NE(s.message().find("not a cairn database"), std::string_view::npos) << s;
  EXPECT_TRUE(fs_->FileExists("/photos/cat.jpg"));
  ASSERT_OK(fs_->CreateDir("/empty"));
  EXPECT_TRUE(absl::IsFailedPrecondition(DestroyDBWithFileSystem("/empty", fs_.get())));
  EXPECT_TRUE(fs_->FileExists("/empty"));
}

TEST_F(LifecycleTest, DestroyDBLeavesForeignFilesAndTheirDirectory) {
  std::unique_ptr<DB> db = Open();
  ASSERT_NE(db, nullptr);
  ASSERT_OK(db->Close());
  db.reset();
  {
    auto f = fs_->NewWritableFile("/db/notes.txt", {});
    ASSERT_OK(f);
    ASSERT_OK((*f)->Close());
  }
  ASSERT_OK(DestroyDBWithFileSystem("/db", fs_.get()));
  auto names = fs_->ListDir("/db");
  ASSERT_OK(names);
  EXPECT_EQ(*names, std::vector<std::string>{"notes.txt"});
}

TEST_F(LifecycleTest, DestroyDBFinishesAnInterruptedDestroy) {
  std::unique_ptr<DB> db = Open();
  ASSERT_NE(db, nullptr);
  ASSERT_OK(db->Put({}, "a", "v"));
  ASSERT_OK(db->Close());
  db.reset();
  // Interrupted just after CURRENT went: cairn files without CURRENT.
  ASSERT_OK(fs_->RemoveFile(lsm::CurrentFileName("/db")));
  ASSERT_OK(DestroyDBWithFileSystem("/db", fs_.get()));
  EXPECT_FALSE(fs_->FileExists("/db"));
}

}  // namespace
}  // namespace cairn
