// replica: a primary and a follower process on one machine. The primary
// writes (puts, deletes, values large enough for the value log) and runs
// garbage collection; the follower, a child process, asks it over a socket
// pair for the change feed from the sequence after the last one it applied
// (DB::GetUpdatesSince) and applies each batch to a database of its own.
// At the end the primary opens the follower's database read-only and
// compares it with its own, key by key and value by value.
// Usage: replica <directory>   (it makes <directory>/primary and /follower)
//
// A building block, not a replicated system: no consensus, no failover, and
// the follower lags the primary by a round (docs/replication.md).
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>

#include "cairn/db.h"

namespace {

constexpr int kRounds = 20;

// The wire format, one way per direction:
//   follower -> primary: u64 next sequence wanted
//   primary -> follower: item* then 'E' u8(more)     (more: 0 when the run ends)
//   item := 'B' u64 sequence u32 entries (('P' str str) | ('D' str))*
//   str  := u32 length, bytes
bool WriteAll(int fd, const void* p, size_t n) {
  const char* c = static_cast<const char*>(p);
  while (n > 0) {
    const ssize_t w = write(fd, c, n);
    if (w <= 0) return false;
    c += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

bool ReadAll(int fd, void* p, size_t n) {
  char* c = static_cast<char*>(p);
  while (n > 0) {
    const ssize_t r = read(fd, c, n);
    if (r <= 0) return false;
    c += r;
    n -= static_cast<size_t>(r);
  }
  return true;
}

void PutU32(std::string* out, uint32_t v) { out->append(reinterpret_cast<char*>(&v), 4); }
void PutU64(std::string* out, uint64_t v) { out->append(reinterpret_cast<char*>(&v), 8); }
void PutStr(std::string* out, std::string_view s) {
  PutU32(out, static_cast<uint32_t>(s.size()));
  out->append(s);
}

bool ReadStr(int fd, std::string* s) {
  uint32_t n = 0;
  if (!ReadAll(fd, &n, 4)) return false;
  s->resize(n);
  return n == 0 || ReadAll(fd, s->data(), n);
}

// Encodes a batch's entries for the wire.
class Encoder : public cairn::WriteBatch::Handler {
 public:
  explicit Encoder(std::string* out) : out_(out) {}
  void Put(std::string_view key, std::string_view value) override {
    out_->push_back('P');
    PutStr(out_, key);
    PutStr(out_, value);
  }
  void Delete(std::string_view key) override {
    out_->push_back('D');
    PutStr(out_, key);
  }

 private:
  std::string* out_;
};

int Fail(const char* who, const char* what, const absl::Status& s) {
  std::fprintf(stderr, "replica %s: %s: %s\n", who, what, s.ToString().c_str());
  return 1;
}

// Answers one request: every item from the sequence asked for.
bool Serve(cairn::DB* db, int fd, bool more) {
  uint64_t next = 0;
  if (!ReadAll(fd, &next, 8)) return false;
  auto it = db->GetUpdatesSince(next);
  if (!it.ok()) return Fail("primary", "GetUpdatesSince", it.status()) == 0;
  std::string out;
  for (; (*it)->Valid(); (*it)->Next()) {
    const cairn::Update& u = (*it)->update();
    if (u.kind != cairn::Update::Kind::kWriteBatch) {
      // An ingestion event: a follower would ingest the same files. This
      // example ingests none.
      std::fprintf(stderr, "replica primary: ingestion events are not replicated here\n");
      return false;
    }
    out.push_back('B');
    PutU64(&out, u.sequence);
    PutU32(&out, u.batch.Count());
    Encoder encoder(&out);
    if (!u.batch.Iterate(&encoder).ok()) return false;
  }
  if (!(*it)->status().ok()) return Fail("primary", "feed", (*it)->status()) == 0;
  out.push_back('E');
  out.push_back(more ? 1 : 0);
  return WriteAll(fd, out.data(), out.size());
}

int RunFollower(const std::string& dir, int fd) {
  cairn::Options options;
  options.create_if_missing = true;
  auto db = cairn::DB::Open(options, dir + "/follower");
  if (!db.ok()) return Fail("follower", "open", db.status());
  uint64_t next = 1;
  while (true) {
    if (!WriteAll(fd, &next, 8)) return 1;
    char tag = 0;
    while (ReadAll(fd, &tag, 1) && tag == 'B') {
      uint64_t sequence = 0;
      uint32_t entries = 0;
      if (!ReadAll(fd, &sequence, 8) || !ReadAll(fd, &entries, 4)) return 1;
      if (sequence != next) {
        std::fprintf(stderr, "replica follower: got sequence %llu, wanted %llu\n",
                     static_cast<unsigned long long>(sequence),
                     static_cast<unsigned long long>(next));
        return 1;
      }
      cairn::WriteBatch batch;
      std::string key, value;
      for (uint32_t i = 0; i < entries; ++i) {
        char op = 0;
        if (!ReadAll(fd, &op, 1) || !ReadStr(fd, &key)) return 1;
        if (op == 'P') {
          if (!ReadStr(fd, &value)) return 1;
          batch.Put(key, value);
        } else {
          batch.Delete(key);
        }
      }
      if (absl::Status s = (*db)->Write(cairn::WriteOptions(), batch); !s.ok()) {
        return Fail("follower", "write", s);
      }
      next = sequence + entries;
    }
    char more = 0;
    if (tag != 'E' || !ReadAll(fd, &more, 1)) return 1;
    if (more == 0) break;
  }
  std::printf("follower: applied through sequence %llu\n",
              static_cast<unsigned long long>(next - 1));
  if (absl::Status s = (*db)->Close(); !s.ok()) return Fail("follower", "close", s);
  return 0;
}

int RunPrimary(const std::string& dir, int fd, pid_t follower) {
  cairn::Options options;
  options.create_if_missing = true;
  options.memtable_size = 256 << 10;  // several flushes in a short run
  options.value_log_segment_size = 1 << 20;
  options.wal_size_limit_bytes = 256 << 20;  // the follower's window
  auto db = cairn::DB::Open(options, dir + "/primary");
  if (!db.ok()) return Fail("primary", "open", db.status());
  uint64_t state = 12345;
  auto rnd = [&state] {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return state >> 33;
  };
  for (int round = 0; round < kRounds; ++round) {
    for (int i = 0; i < 200; ++i) {
      const std::string key = "key" + std::to_string(rnd() % 500);
      absl::Status s;
      if (rnd() % 5 == 0) {
        s = (*db)->Delete(cairn::WriteOptions(), key);
      } else {
        // Every third value goes to the value log; the feed carries it.
        const size_t size = rnd() % 3 == 0 ? 8000 + rnd() % 8000 : 10 + rnd() % 100;
        s = (*db)->Put(cairn::WriteOptions(), key,
                       std::string(size, static_cast<char>('a' + rnd() % 26)));
      }
      if (!s.ok()) return Fail("primary", "write", s);
    }
    if (round % 5 == 4) {
      if (auto gc = (*db)->RunGC(); !gc.ok()) return Fail("primary", "gc", gc.status());
    }
    if (!Serve(db->get(), fd, /*more=*/true)) return 1;
  }
  if (!Serve(db->get(), fd, /*more=*/false)) return 1;
  int wstatus = 0;
  if (waitpid(follower, &wstatus, 0) != follower || !WIFEXITED(wstatus) ||
      WEXITSTATUS(wstatus) != 0) {
    std::fprintf(stderr, "replica: the follower failed\n");
    return 1;
  }
  // The follower's database against the primary's, key by key.
  auto copy = cairn::DB::OpenForReadOnly(cairn::Options(), dir + "/follower");
  if (!copy.ok()) return Fail("primary", "open the follower's database", copy.status());
  auto a = (*db)->NewIterator(cairn::ReadOptions());
  auto b = (*copy)->NewIterator(cairn::ReadOptions());
  size_t keys = 0;
  for (a->SeekToFirst(), b->SeekToFirst(); a->Valid(); a->Next(), b->Next(), ++keys) {
    if (!b->Valid() || a->key() != b->key() || a->value() != b->value()) {
      std::fprintf(stderr, "replica: the follower differs at key %s\n",
                   std::string(a->key()).c_str());
      return 1;
    }
  }
  if (b->Valid() || !a->status().ok() || !b->status().ok()) {
    std::fprintf(stderr, "replica: the follower holds more keys, or a scan failed\n");
    return 1;
  }
  std::printf("primary: %zu keys through sequence %llu; the follower holds the same\n", keys,
              static_cast<unsigned long long>((*db)->GetLatestSequenceNumber()));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: replica <directory>\n");
    return 2;
  }
  const std::string dir = argv[1];
  mkdir(dir.c_str(), 0755);  // may exist
  int fds[2];
  if (socketpair(AF_UNIX, SOCK_STREAM, 0, fds) != 0) {
    std::perror("socketpair");
    return 1;
  }
  // Fork before either side opens a database: each process owns its own.
  const pid_t pid = fork();
  if (pid < 0) {
    std::perror("fork");
    return 1;
  }
  if (pid == 0) {
    close(fds[0]);
    _exit(RunFollower(dir, fds[1]));
  }
  close(fds[1]);
  return RunPrimary(dir, fds[0], pid);
}
