// `cairn`, the command-line tool: checks and dumps a database's files.
//
//   cairn <command> [flags] <db-dir or file>
//
// This file dispatches to one function per subcommand (commands.h) and
// holds the helpers they share. Exit codes: 0 nothing wrong, 1 problems
// found (or an error), 2 a bad command line. docs/tools.md is the manual.
#include <cstdio>
#include <cstring>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/reflection.h"
#include "absl/flags/usage.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "tools/commands.h"

ABSL_FLAG(bool, json, false, "stats: print GetStats() as JSON");
ABSL_FLAG(bool, verify, false, "dump-sst: also read and verify every block (Table::VerifyAll)");
ABSL_FLAG(int64_t, max_entries, 0,
          "dump-wal, dump-sst, dump-vlog, dump-updates: print at most this many entries (0: all)");

namespace cairn::tools {
namespace {

struct Command {
  std::string_view name;
  int (*run)(const Args&);
  std::set<std::string_view> flags;  // the flags it accepts
  std::string_view synopsis;
  std::string_view what;
};

const std::vector<Command>& Commands() {
  static const auto* commands = new std::vector<Command>{
      {"check", RunCheck, {}, "check <db-dir>", "verify a closed database (read-only)"},
      {"stats",
       RunStats,
       {"json"},
       "stats [--json] <db-dir>",
       "open the database, print its stats"},
      {"checkpoint",
       RunCheckpoint,
       {},
       "checkpoint <db-dir> <new-dir>",
       "write an openable copy of the database to new-dir"},
      {"ingest",
       RunIngest,
       {"copy"},
       "ingest [--copy] <db-dir> <file-set-dir>...",
       "add file sets written by ExternalFileWriter, all or none"},
      {"repair",
       RunRepair,
       {},
       "repair <db-dir>",
       "salvage a damaged database; originals go to <db-dir>/lost/"},
      {"dump-wal",
       RunDumpWal,
       {"max_entries"},
       "dump-wal [--max_entries=N] <NNNNNN.log>",
       "every record and entry of a WAL"},
      {"dump-updates",
       RunDumpUpdates,
       {"since", "max_entries"},
       "dump-updates --since=N [--max_entries=N] <db-dir>",
       "the change feed from sequence N (opens the DB: takes its LOCK)"},
      {"dump-sst",
       RunDumpSst,
       {"verify", "max_entries"},
       "dump-sst [--verify] [--max_entries=N] <NNNNNN.sst>",
       "properties and entries"},
      {"dump-vlog",
       RunDumpVlog,
       {"max_entries"},
       "dump-vlog [--max_entries=N] <NNNNNN.vlog>",
       "header and records of a segment"},
      {"dump-manifest",
       RunDumpManifest,
       {},
       "dump-manifest <db-dir or MANIFEST-NNNNNN>",
       "version edits and final state"},
  };
  return *commands;
}

std::string UsageText() {
  std::string text = "usage: cairn <command> [flags] <db-dir or file>\ncommands:\n";
  for (const Command& c : Commands()) {
    absl::StrAppendFormat(&text, "  cairn %-52s %s\n", std::string(c.synopsis),
                          std::string(c.what));
  }
  text.append("exit status: 0 nothing wrong, 1 problems found, 2 usage error\n");
  return text;
}

// Checks every --flag before absl parses them, so an unknown flag, a flag
// the command does not take or a malformed value exits with kExitUsage
// (absl's parser would exit with 1, which means "problems found" here).
// Sets *command to the first non-flag argument's command.
bool ValidateFlags(int argc, char** argv, const Command** command, std::string* error) {
  std::vector<std::string> given;
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    if (arg == "--") break;
    if (arg.size() < 2 || arg[0] != '-') {
      if (*command == nullptr) {
        for (const Command& c : Commands()) {
          if (c.name == arg) *command = &c;
        }
        if (*command == nullptr) {
          *error = absl::StrCat("unknown command '", std::string(arg), "'");
          return false;
        }
      }
      continue;
    }
    arg.remove_prefix(arg[1] == '-' ? 2 : 1);
    const size_t eq = arg.find('=');
    std::string name(arg.substr(0, eq));
    absl::CommandLineFlag* flag = absl::FindCommandLineFlag(name);
    bool negated = false;
    if (flag == nullptr && name.rfind("no", 0) == 0) {
      flag = absl::FindCommandLineFlag(name.substr(2));
      negated = flag != nullptr && flag->IsOfType<bool>();
      if (negated) name = name.substr(2);
    }
    if (flag == nullptr || (name != "json" && name != "verify" && name != "max_entries" &&
                            name != "since")) {
      *error = absl::StrCat("unknown flag --", name);
      return false;
    }
    std::string value;
    if (eq != std::string_view::npos) {
      value = std::string(arg.substr(eq + 1));
    } else if (flag->IsOfType<bool>()) {
      value = negated ? "false" : "true";
    } else if (i + 1 < argc) {
      value = argv[++i];
    } else {
      *error = absl::StrCat("flag --", name, " needs a value");
      return false;
    }
    std::string parse_error;
    if (!flag->ParseFrom(value, &parse_error)) {
      *error = absl::StrCat("flag --", name, ": ", parse_error);
      return false;
    }
    given.push_back(name);
  }
  if (*command == nullptr) {
    *error = "no command given";
    return false;
  }
  for (const std::string& f : given) {
    if (!(*command)->flags.count(f)) {
      *error = absl::StrCat("'", std::string((*command)->name), "' does not take --", f);
      return false;
    }
  }
  return true;
}

}  // namespace

int UsageError(std::string_view command, std::string_view message) {
  absl::FPrintF(stderr, "cairn%s%s: %s\n%s", command.empty() ? "" : " ", std::string(command),
                std::string(message), UsageText());
  return kExitUsage;
}

int Fail(std::string_view command, const absl::Status& status) {
  absl::FPrintF(stderr, "cairn %s: %s\n", std::string(command), status.ToString());
  return kExitProblems;
}

absl::StatusOr<std::shared_ptr<io::FileSystem>> OpenFileSystem() {
  return io::NewFileSystem(io::IoBackend::kAuto);
}

std::string Escape(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  for (unsigned char c : bytes) {
    if (c == '\\') {
      out.append("\\\\");
    } else if (c >= 0x20 && c < 0x7f) {
      out.push_back(static_cast<char>(c));
    } else {
      absl::StrAppendFormat(&out, "\\x%02x", c);
    }
  }
  return out;
}

std::string Preview(std::string_view value) {
  if (value.size() <= kPreviewBytes) return Escape(value);
  return absl::StrCat(Escape(value.substr(0, kPreviewBytes)), "...");
}

std::string_view BaseName(std::string_view path) {
  const size_t slash = path.find_last_of('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

uint64_t MaxEntries() {
  const int64_t n = absl::GetFlag(FLAGS_max_entries);
  return n <= 0 ? UINT64_MAX : static_cast<uint64_t>(n);
}

}  // namespace cairn::tools

int main(int argc, char** argv) {
  using namespace cairn::tools;  // NOLINT: the tool's own namespace
  absl::SetProgramUsageMessage(UsageText());
  if (argc == 2 && (std::strcmp(argv[1], "help") == 0 || std::strcmp(argv[1], "--help") == 0 ||
                    std::strcmp(argv[1], "-h") == 0)) {
    absl::PrintF("%s", UsageText());
    return kExitOk;
  }
  const Command* command = nullptr;
  std::string error;
  if (!ValidateFlags(argc, argv, &command, &error)) return UsageError("", error);
  std::vector<char*> positional = absl::ParseCommandLine(argc, argv);
  // positional[0] is the program, then the command, then its arguments.
  Args args;
  for (size_t i = 2; i < positional.size(); ++i) args.emplace_back(positional[i]);
  return command->run(args);
}
