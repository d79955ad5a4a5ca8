// StartSyncDir: a directory's sync, run beside the caller's other work.
//
// A file's directory entry must be durable before anything names the file
// (the manifest, for tables and segments). A sync of the directory started
// after the file was created covers its entry, so a caller that creates a
// file and then writes and syncs it can start the directory's sync at once
// and wait for it only before the file is named: the two device round trips
// overlap instead of following each other.
//
// Thread safety: fs must be safe to call from another thread, as every
// FileSystem is, and must outlive the returned future's result.
#ifndef CAIRN_IO_DIR_SYNC_H_
#define CAIRN_IO_DIR_SYNC_H_

#include <future>
#include <string>
#include <system_error>

#include "absl/status/status.h"
#include "io/file_system.h"

namespace cairn::io {

// Starts fs->SyncDir(dir) on a thread of its own; the future holds its
// status. When no thread can be started, syncs on the caller's thread and
// returns the status ready, so the caller's wait still covers the sync. A
// future dropped without get() waits for the sync as it goes.
inline std::future<absl::Status> StartSyncDir(FileSystem* fs, const std::string& dir) {
  try {
    // dir is copied, not moved: the fallback below still needs it.
    return std::async(std::launch::async, [fs, dir] { return fs->SyncDir(dir); });
  } catch (const std::system_error&) {
    std::promise<absl::Status> done;
    done.set_value(fs->SyncDir(dir));
    return done.get_future();
  }
}

}  // namespace cairn::io

#endif  // CAIRN_IO_DIR_SYNC_H_
