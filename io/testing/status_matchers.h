// ASSERT_OK and EXPECT_OK: gtest assertions on an absl::Status or
// absl::StatusOr<T> that print the status when it is not OK. Tests only.
//
//   ASSERT_OK(db->Put({}, "k", "v"));
//   EXPECT_OK(OpenWithFileSystem(options, "/db", fs).status());
#ifndef CAIRN_IO_TESTING_STATUS_MATCHERS_H_
#define CAIRN_IO_TESTING_STATUS_MATCHERS_H_

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gtest/gtest.h"

namespace cairn::io::testing {

inline const absl::Status& GetStatus(const absl::Status& status) { return status; }
template <typename T>
const absl::Status& GetStatus(const absl::StatusOr<T>& status_or) {
  return status_or.status();
}

}  // namespace cairn::io::testing

#define CAIRN_STATUS_OK_IMPL_(expr, fail)                                           \
  if (const absl::Status cairn_status_ = ::cairn::io::testing::GetStatus(expr);     \
      cairn_status_.ok()) {                                                          \
  } else                                                                             \
    fail() << #expr << " is " << cairn_status_ << " "

#define ASSERT_OK(expr) CAIRN_STATUS_OK_IMPL_(expr, FAIL)
#define EXPECT_OK(expr) CAIRN_STATUS_OK_IMPL_(expr, ADD_FAILURE)

#endif  // CAIRN_IO_TESTING_STATUS_MATCHERS_H_
