// The subcommands of the `cairn` command-line tool (tools/main.cc dispatches)
// and the few helpers they share. One subcommand per file:
// check_command.cc, stats_command.cc, checkpoint_command.cc, ingest_command.cc, repair_command.cc,
// dump_wal_command.cc, dump_sst_command.cc, dump_vlog_command.cc,
// dump_manifest_command.cc, dump_updates_command.cc.
// Manual: docs/tools.md.
//
// Each Run* function takes the positional arguments after the command name,
// prints its report to stdout and errors to stderr, and returns the process
// exit code. Every command but `checkpoint`, `ingest`, `repair` and `dump-updates` only reads:
// none takes the LOCK or writes a byte; `checkpoint` writes a new directory, `ingest` adds file
// sets to the database, `dump-updates` opens it to read the feed, and `repair` rewrites the
// database (cairn/repair.h).
//
// Thread safety: single-threaded; the commands run once per process.
#ifndef CAIRN_TOOLS_COMMANDS_H_
#define CAIRN_TOOLS_COMMANDS_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/flags/declare.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "io/file_system.h"

ABSL_DECLARE_FLAG(bool, json);
ABSL_DECLARE_FLAG(bool, verify);
ABSL_DECLARE_FLAG(int64_t, max_entries);

namespace cairn::tools {

// Exit codes shared by every command.
inline constexpr int kExitOk = 0;        // done; nothing wrong found
inline constexpr int kExitProblems = 1;  // a problem, corruption or I/O error
inline constexpr int kExitUsage = 2;     // bad command line

using Args = std::vector<std::string>;

int RunCheck(const Args& args);
int RunStats(const Args& args);
int RunCheckpoint(const Args& args);
int RunIngest(const Args& args);
int RunRepair(const Args& args);
int RunDumpWal(const Args& args);
int RunDumpSst(const Args& args);
int RunDumpVlog(const Args& args);
int RunDumpManifest(const Args& args);
int RunDumpUpdates(const Args& args);

// --- Shared helpers (defined in main.cc) ---

// Prints "cairn <command>: <message>" to stderr and returns kExitUsage.
int UsageError(std::string_view command, std::string_view message);
// Prints "cairn <command>: <status>" to stderr and returns kExitProblems.
int Fail(std::string_view command, const absl::Status& status);

// The real file system (backend per CAIRN_IO, else automatic), for reading.
absl::StatusOr<std::shared_ptr<io::FileSystem>> OpenFileSystem();

// Bytes as printable text: printable ASCII as is, a backslash doubled,
// anything else as \xNN.
std::string Escape(std::string_view bytes);
// Escape(value), cut to its first kPreviewBytes bytes followed by "..." when
// longer.
inline constexpr size_t kPreviewBytes = 32;
std::string Preview(std::string_view value);

// The last component of a path ("/db/000012.sst" -> "000012.sst").
std::string_view BaseName(std::string_view path);

// Whether the newest OPTIONS file of dbname sets WAL retention
// (wal_ttl_seconds or wal_size_limit_bytes above 0): an open then keeps the
// WALs the tables hold, for the change feed (dump_updates_command.cc).
bool WalRetentionSet(io::FileSystem* fs, const std::string& dbname);

// --max_entries as a limit: 0 (or negative) means no limit.
uint64_t MaxEntries();

}  // namespace cairn::tools

#endif  // CAIRN_TOOLS_COMMANDS_H_
