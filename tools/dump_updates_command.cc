// `cairn dump-updates <db-dir> --since N`: the change feed from sequence N
// (DB::GetUpdatesSince, docs/replication.md), one line per item and one
// per entry, values shown as a preview (Preview) with their size.
//
// The feed is read through a read-write open (a read-only DB has no
// feed): the command takes the LOCK, so the database must not be open in
// another process. It opens with a WAL retention of 100 years and no size
// limit, so that it deletes no WAL the database kept; the next open by the
// application applies the application's limits again.
#include <cstdio>
#include <memory>
#include <optional>
#include <string>

#include "absl/flags/flag.h"
#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "cairn/db.h"
#include "cairn/options.h"
#include "core/options_file.h"
#include "tools/commands.h"

ABSL_FLAG(int64_t, since, 1, "dump-updates: the first sequence number to show");

namespace cairn::tools {
namespace {

constexpr std::string_view kCommand = "dump-updates";

// Prints one batch's entries, at most *budget of them.
class EntryPrinter : public WriteBatch::Handler {
 public:
  EntryPrinter(uint64_t sequence, uint64_t* budget) : sequence_(sequence), budget_(budget) {}
  void Put(std::string_view key, std::string_view value) override {
    if (Take()) {
      absl::PrintF("  %d PUT %s -> %s (%d bytes)\n", sequence_, Escape(key), Preview(value),
                   value.size());
    }
    ++sequence_;
  }
  // An expiring put (WAL format 6) with its expiry in microseconds since
  // the Unix epoch, as dump-wal prints it.
  void PutWithExpiry(std::string_view key, std::string_view value,
                     uint64_t expiry_micros) override {
    if (Take()) {
      absl::PrintF("  %d PUT %s -> %s (%d bytes) expires_at_us %d\n", sequence_, Escape(key),
                   Preview(value), value.size(), expiry_micros);
    }
    ++sequence_;
  }
  void Delete(std::string_view key) override {
    if (Take()) absl::PrintF("  %d DELETE %s\n", sequence_, Escape(key));
    ++sequence_;
  }
  absl::Status DeleteRange(std::string_view begin, std::string_view end) override {
    if (Take()) absl::PrintF("  %d DELETE_RANGE [%s, %s)\n", sequence_, Escape(begin), Escape(end));
    ++sequence_;
    return absl::OkStatus();
  }

 private:
  bool Take() {
    if (*budget_ == 0) return false;
    --*budget_;
    return true;
  }
  uint64_t sequence_;
  uint64_t* budget_;
};

}  // namespace

bool WalRetentionSet(io::FileSystem* fs, const std::string& dbname) {
  absl::StatusOr<std::optional<uint64_t>> n = LatestOptionsFile(fs, dbname);
  if (!n.ok() || !n->has_value()) return false;
  absl::StatusOr<std::string> text = ReadOptionsFile(fs, dbname, **n);
  if (!text.ok()) return false;
  for (std::string_view key : {"\nwal_ttl_seconds=", "\nwal_size_limit_bytes="}) {
    const size_t at = text->find(key);
    if (at != std::string::npos && text->compare(at + key.size(), 2, "0\n") != 0) return true;
  }
  return false;
}

int RunDumpUpdates(const Args& args) {
  if (args.size() != 1) return UsageError(kCommand, "expects one database directory");
  const int64_t since = absl::GetFlag(FLAGS_since);
  if (since < 0) return UsageError(kCommand, "--since must be at least 0");
  Options options;
  options.create_if_missing = false;
  options.wal_ttl_seconds = kMaxWalTtlSeconds;
  absl::StatusOr<std::unique_ptr<DB>> db = DB::Open(options, args[0]);
  if (!db.ok()) return Fail(kCommand, db.status());
  absl::StatusOr<std::unique_ptr<UpdateIterator>> it =
      (*db)->GetUpdatesSince(static_cast<uint64_t>(since));
  if (!it.ok()) return Fail(kCommand, it.status());
  uint64_t budget = MaxEntries();
  uint64_t items = 0;
  for (; (*it)->Valid(); (*it)->Next()) {
    const Update& u = (*it)->update();
    ++items;
    if (u.kind == Update::Kind::kIngestion) {
      absl::PrintF("%d INGEST %d files\n", u.sequence, u.ingested_files.size());
      for (const std::string& f : u.ingested_files) absl::PrintF("  %s\n", Escape(f));
      continue;
    }
    absl::PrintF("%d..%d BATCH %d entries\n", u.sequence, u.last_sequence(), u.batch.Count());
    EntryPrinter printer(u.sequence, &budget);
    if (absl::Status s = u.batch.Iterate(&printer); !s.ok()) return Fail(kCommand, s);
  }
  if (!(*it)->status().ok()) return Fail(kCommand, (*it)->status());
  absl::PrintF("%d items through sequence %d\n", items, (*db)->GetLatestSequenceNumber());
  it->reset();
  if (absl::Status s = (*db)->Close(); !s.ok()) return Fail(kCommand, s);
  return kExitOk;
}

}  // namespace cairn::tools
