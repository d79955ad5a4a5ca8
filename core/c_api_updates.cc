// The C API's sequence numbers and change feed (cairn/c.h, "Sequence
// numbers and the change feed"): DB::GetLatestSequenceNumber,
// Snapshot::GetSequenceNumber, Write with its sequence, GetUpdatesSince.
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "cairn/c.h"
#include "cairn/db.h"
#include "core/c_api_internal.h"

struct cairn_updates_t {
  std::unique_ptr<cairn::UpdateIterator> it;
  // The current item's entries, decoded once per item.
  struct Entry {
    bool is_put = false;
    std::string_view key, value;
  };
  std::vector<Entry> entries;
};

namespace {

// Collects a batch's entries as views into the batch (which the iterator
// holds until Next).
class EntryCollector : public cairn::WriteBatch::Handler {
 public:
  explicit EntryCollector(std::vector<cairn_updates_t::Entry>* out) : out_(out) {}
  void Put(std::string_view key, std::string_view value) override {
    out_->push_back({true, key, value});
  }
  void Delete(std::string_view key) override { out_->push_back({false, key, {}}); }

 private:
  std::vector<cairn_updates_t::Entry>* out_;
};

// Decodes the current item's entries (none when it is not valid).
void Decode(cairn_updates_t* it) {
  it->entries.clear();
  if (!it->it->Valid()) return;
  const cairn::Update& u = it->it->update();
  if (u.kind == cairn::Update::Kind::kIngestion) {
    for (const std::string& f : u.ingested_files) it->entries.push_back({false, f, {}});
    return;
  }
  EntryCollector collector(&it->entries);
  // The feed's batches hold only puts and deletes, which always iterate.
  u.batch.Iterate(&collector).IgnoreError();
}

}  // namespace

extern "C" {

uint64_t cairn_get_latest_sequence_number(cairn_t* db) {
  if (!cairn::c_api::CheckDb(db).ok()) return 0;
  return db->db->GetLatestSequenceNumber();
}

uint64_t cairn_snapshot_get_sequence_number(const cairn_snapshot_t* snapshot) {
  if (snapshot == nullptr) return 0;
  return reinterpret_cast<const cairn::Snapshot*>(snapshot)->GetSequenceNumber();
}

void cairn_write_get_sequence(cairn_t* db, const cairn_writeoptions_t* options,
                              cairn_writebatch_t* batch, uint64_t* first_sequence, char** errptr) {
  if (!cairn::c_api::SaveError(cairn::c_api::CheckDb(db), errptr)) return;
  if (batch == nullptr) {
    cairn::c_api::SaveError(absl::InvalidArgumentError("batch is NULL"), errptr);
    return;
  }
  cairn::WriteOptions w;
  if (options != nullptr) w = options->options;
  cairn::c_api::SaveError(db->db->Write(w, batch->batch, first_sequence), errptr);
}

cairn_updates_t* cairn_get_updates_since(cairn_t* db, uint64_t since, char** errptr) {
  if (!cairn::c_api::SaveError(cairn::c_api::CheckDb(db), errptr)) return nullptr;
  absl::StatusOr<std::unique_ptr<cairn::UpdateIterator>> it = db->db->GetUpdatesSince(since);
  if (!cairn::c_api::SaveError(it.status(), errptr)) return nullptr;
  auto* out = new cairn_updates_t{*std::move(it), {}};
  Decode(out);
  return out;
}

void cairn_updates_destroy(cairn_updates_t* it) { delete it; }

unsigned char cairn_updates_valid(const cairn_updates_t* it) {
  return it != nullptr && it->it->Valid() ? 1 : 0;
}

void cairn_updates_next(cairn_updates_t* it) {
  if (it == nullptr || !it->it->Valid()) return;
  it->it->Next();
  Decode(it);
}

void cairn_updates_get_error(const cairn_updates_t* it, char** errptr) {
  if (it == nullptr) {
    cairn::c_api::SaveError(absl::InvalidArgumentError("feed iterator is NULL"), errptr);
    return;
  }
  cairn::c_api::SaveError(it->it->status(), errptr);
}

uint64_t cairn_updates_sequence(const cairn_updates_t* it) {
  return cairn_updates_valid(it) ? it->it->update().sequence : 0;
}

int cairn_updates_kind(const cairn_updates_t* it) {
  return cairn_updates_valid(it) && it->it->update().kind == cairn::Update::Kind::kIngestion ? 1
                                                                                             : 0;
}

size_t cairn_updates_count(const cairn_updates_t* it) {
  return it == nullptr ? 0 : it->entries.size();
}

void cairn_updates_entry(const cairn_updates_t* it, size_t i, unsigned char* is_put,
                         const char** key, size_t* keylen, const char** val, size_t* vallen) {
  const bool ok = it != nullptr && i < it->entries.size();
  const cairn_updates_t::Entry e = ok ? it->entries[i] : cairn_updates_t::Entry{};
  if (is_put != nullptr) *is_put = e.is_put ? 1 : 0;
  if (key != nullptr) *key = e.key.data();
  if (keylen != nullptr) *keylen = e.key.size();
  if (val != nullptr) *val = e.value.data();
  if (vallen != nullptr) *vallen = e.value.size();
}

}  // extern "C"
