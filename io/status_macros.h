// Status propagation macros. Abseil 20220623 (Debian 12) ships none, so cairn
// keeps its own two here; every folder may use them.
#ifndef CAIRN_IO_STATUS_MACROS_H_
#define CAIRN_IO_STATUS_MACROS_H_

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define CAIRN_STATUS_CONCAT_INNER_(a, b) a##b
#define CAIRN_STATUS_CONCAT_(a, b) CAIRN_STATUS_CONCAT_INNER_(a, b)

// CAIRN_RETURN_IF_ERROR(expr): evaluates expr (an absl::Status) once and
// returns it from the enclosing function when it is not OK.
#define CAIRN_RETURN_IF_ERROR(expr)                  \
  do {                                               \
    ::absl::Status cairn_status_ = (expr);           \
    if (!cairn_status_.ok()) return cairn_status_;   \
  } while (0)

// CAIRN_ASSIGN_OR_RETURN(lhs, expr): evaluates expr (an absl::StatusOr<T>);
// on error returns its status, else moves the value into lhs, which may be a
// declaration (`auto x`).
#define CAIRN_ASSIGN_OR_RETURN(lhs, expr) \
  CAIRN_ASSIGN_OR_RETURN_IMPL_(CAIRN_STATUS_CONCAT_(cairn_statusor_, __LINE__), lhs, expr)

#define CAIRN_ASSIGN_OR_RETURN_IMPL_(statusor, lhs, expr) \
  auto statusor = (expr);                                 \
  if (!statusor.ok()) return std::move(statusor).status(); \
  lhs = std::move(statusor).value()

#endif  // CAIRN_IO_STATUS_MACROS_H_
