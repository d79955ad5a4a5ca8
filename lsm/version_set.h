// VersionSet owns the LSM tree's current Version and the MANIFEST that makes
// it durable: it applies VersionEdits (LogAndApply), recovers the tree from
// CURRENT and the manifest (Recover), and hands out file and sequence
// numbers. Format: docs/manifest_format.md.
//
// The manifest is a log (lsm/log_writer.h framing) of encoded VersionEdits;
// its first record is a snapshot of the whole tree, so each manifest stands
// alone. A new manifest is started at the first LogAndApply after Recover (so
// nothing is ever appended after a torn tail) and whenever the manifest
// passes max_manifest_size; the old one is then removed.
//
// Extension records: opaque (tag, payload) records that another component
// (the value log) stores through VersionEdit::AddExtension; Recover hands
// them back in order. When a new manifest is started, the extension
// snapshotter supplies the records that stand for that component's state.
//
// Thread safety: every method may be called from any thread. LogAndApply,
// CreateNew and Recover are serialized with each other; current(), the
// number accessors and AddLiveFiles never wait for manifest I/O.
#ifndef CAIRN_LSM_VERSION_SET_H_
#define CAIRN_LSM_VERSION_SET_H_

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_set.h"
#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "io/file_system.h"
#include "lsm/dbformat.h"
#include "lsm/version.h"
#include "lsm/version_edit.h"

namespace cairn::lsm {

class LogWriter;

struct VersionSetOptions {
  // A new manifest is started when the live one grows past this many bytes
  // and past twice the size it had when it was started (its snapshot), so a
  // tree whose snapshot alone is large does not start one at every edit.
  uint64_t max_manifest_size = uint64_t{64} << 20;
};

class VersionSet {
 public:
  using ExtensionRecords = std::vector<std::pair<uint32_t, std::string>>;

  // fs must outlive the VersionSet; dbname is the database directory, which
  // must exist before CreateNew.
  VersionSet(io::FileSystem* fs, std::string dbname, VersionSetOptions options = {});
  ~VersionSet();

  VersionSet(const VersionSet&) = delete;
  VersionSet& operator=(const VersionSet&) = delete;

  // Creates a new database's first manifest (MANIFEST-000001, or the next
  // file number if numbers were already taken) holding an empty tree, then
  // CURRENT. Errors: AlreadyExists when dbname already has a CURRENT;
  // FailedPrecondition when this VersionSet was already created or recovered;
  // I/O errors.
  absl::Status CreateNew();

  // Reads CURRENT and the manifest it names (on a new VersionSet, or after
  // CreateNew, or again later to reload the durable state, which also clears
  // a sticky manifest error); rebuilds the current version and
  // restores the log number, next file number and last sequence; calls
  // on_extension(tag, payload) for every extension record, in order (if
  // Recover then fails, discard what the callback built). An error returned
  // by on_extension stops recovery and is returned.
  // Errors: NotFound when CURRENT is missing (no database); DataLoss naming
  // the file (and offset) for a corrupt CURRENT, a missing or corrupt
  // manifest, or edits that do not fit together; FailedPrecondition for a
  // newer format version or another comparator. A torn last record is
  // ignored: the manifest is synced before an edit takes effect, so a torn
  // record was never acknowledged.
  absl::Status Recover(
      absl::FunctionRef<absl::Status(uint32_t tag, std::string_view payload)> on_extension);

  // Completes edit (log number if unset, next file number, last sequence),
  // builds the new version, appends edit to the manifest and syncs it, then
  // installs the new version as current(). Concurrent callers are serialized.
  // Errors: InvalidArgument for an edit that does not fit the current version
  // (deleting a file that is not there, a live file number, overlapping files
  // from L1, a log number going backwards); nothing is written then.
  // FailedPrecondition before CreateNew/Recover. I/O errors: the new version
  // is not installed, and the error is sticky, since the manifest's durable
  // state is unknown: every later LogAndApply returns it until the database
  // is reopened.
  absl::Status LogAndApply(VersionEdit* edit);

  // Sets the function that returns the extension records describing the
  // current state of their owner, written into each new manifest's snapshot
  // record. It runs inside LogAndApply/CreateNew (serialized with them) and
  // must reflect every edit already applied and none of the edit in flight:
  // a caller that updates its state after LogAndApply returns must serialize
  // that update with its LogAndApply calls.
  void SetExtensionSnapshotter(std::function<ExtensionRecords()> fn);

  // The current version; keep the pointer for as long as its files are read.
  std::shared_ptr<const Version> current() const;

  // Allocates a file number (tables, logs, segments, manifests share them).
  uint64_t NewFileNumber() { return next_file_number_.fetch_add(1); }
  // Makes sure n is never handed out by NewFileNumber.
  void MarkFileNumberUsed(uint64_t n);
  // The number NewFileNumber would return next.
  uint64_t NextFileNumber() const { return next_file_number_.load(); }

  SequenceNumber LastSequence() const { return last_sequence_.load(); }
  // Raises LastSequence() to s; never lowers it.
  void SetLastSequence(SequenceNumber s);

  // WAL files numbered below this are no longer needed.
  uint64_t LogNumber() const;
  // The number of the live manifest (0 before CreateNew/Recover).
  uint64_t ManifestFileNumber() const;
  // Where Recover found the manifest ending in a torn record (the offset of
  // the end of its last whole record); nullopt when it ended cleanly. The
  // torn record is ignored, as a crash during its unsynced append leaves it;
  // the caller decides whether the files on disk agree that it was never
  // acknowledged (docs/durability.md, "Recovery").
  std::optional<uint64_t> RecoveredTornTail() const;
  // True when a record of the manifest Recover read added this table, even
  // if a later record deleted it (such a file is garbage waiting for its
  // deletion, not a table a lost record named).
  bool ManifestListedTable(uint64_t number) const;
  // The last sequence the manifest on disk records (LastSequence() may be
  // ahead of it until the next edit).
  SequenceNumber LoggedLastSequence() const { return logged_last_sequence_.load(); }
  // Where the next compaction of level starts (empty: at the beginning).
  std::string CompactPointer(int level) const;

  // The durable state as a checkpoint's manifest needs it, all taken at one
  // point between edits: the current version (hold it while its files are
  // copied), the log number, and the snapshot record of that version with
  // next_file as the next file number, last_sequence raised to at least
  // last_sequence, and the extension snapshotter's records. The caller
  // serializes the snapshotter's state with LogAndApply (as for a new
  // manifest). FailedPrecondition before CreateNew/Recover.
  struct CheckpointState {
    std::shared_ptr<const Version> version;
    uint64_t log_number = 0;
    std::string snapshot_record;
  };
  absl::StatusOr<CheckpointState> CaptureCheckpointState(uint64_t next_file,
                                                         SequenceNumber last_sequence);

  // Adds every file number referenced by any version still held by anyone,
  // the current one included (for obsolete-file deletion).
  void AddLiveFiles(absl::flat_hash_set<uint64_t>* live) const;

 private:
  // The snapshot record: every file of v and all counters, plus the
  // snapshotter's extension records.
  std::string SnapshotRecord(const Version& v, uint64_t log_number, uint64_t next_file,
                             const std::array<std::string, kNumLevels>& compact_pointers,
                             SequenceNumber last_sequence = 0) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(apply_mu_);
  // Writes manifest `number` holding records, syncs it and points CURRENT at
  // it. On success *writer is the open manifest.
  absl::Status WriteNewManifest(uint64_t number, const std::vector<std::string>& records,
                                std::unique_ptr<LogWriter>* writer)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(apply_mu_);
  // Completes edit (next file number, last sequence) and appends it to the
  // manifest, synced; first starts a new manifest (snapshot of base, then the
  // edit) when there is none or it is too big, setting *new_manifest to its
  // number (left 0 otherwise).
  absl::Status WriteEdit(const Version& base, uint64_t log_number,
                         const std::array<std::string, kNumLevels>& compact_pointers,
                         VersionEdit* edit, uint64_t* new_manifest)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(apply_mu_);
  // Makes v current and remembers it for AddLiveFiles.
  void Install(std::shared_ptr<const Version> v) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Recover's body; wraps DataLoss messages with the manifest's name.
  absl::Status RecoverFromManifest(
      uint64_t manifest_number,
      absl::FunctionRef<absl::Status(uint32_t, std::string_view)> on_extension)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(apply_mu_);

  io::FileSystem* const fs_;
  const std::string dbname_;
  const VersionSetOptions options_;

  std::atomic<uint64_t> next_file_number_{1};
  std::atomic<SequenceNumber> last_sequence_{0};
  std::atomic<SequenceNumber> logged_last_sequence_{0};

  // Serializes CreateNew, Recover and LogAndApply, and guards the manifest.
  // Acquired before mu_.
  absl::Mutex apply_mu_;
  bool opened_ ABSL_GUARDED_BY(apply_mu_) = false;
  std::unique_ptr<LogWriter> manifest_ ABSL_GUARDED_BY(apply_mu_);  // null: start a new one
  uint64_t manifest_start_size_ ABSL_GUARDED_BY(apply_mu_) = 0;  // after its first records
  absl::Status manifest_error_ ABSL_GUARDED_BY(apply_mu_);  // sticky
  std::function<ExtensionRecords()> snapshotter_ ABSL_GUARDED_BY(apply_mu_);

  // Guards the installed state, read by other threads without manifest I/O.
  mutable absl::Mutex mu_;
  std::shared_ptr<const Version> current_ ABSL_GUARDED_BY(mu_);
  // Every installed version, for AddLiveFiles; expired ones are pruned.
  std::vector<std::weak_ptr<const Version>> versions_ ABSL_GUARDED_BY(mu_);
  uint64_t log_number_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t manifest_file_number_ ABSL_GUARDED_BY(mu_) = 0;
  std::array<std::string, kNumLevels> compact_pointers_ ABSL_GUARDED_BY(mu_);
  std::optional<uint64_t> manifest_torn_tail_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_set<uint64_t> tables_listed_ ABSL_GUARDED_BY(mu_);  // by Recover's manifest
};

}  // namespace cairn::lsm

#endif  // CAIRN_LSM_VERSION_SET_H_
