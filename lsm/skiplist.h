// SkipList is the memtable's sorted index: a skip list of Keys allocated in an
// Arena, never removing anything. Comparator is a functor returning <0, 0, >0.
//
// Thread safety: writes (Insert) need external synchronization, one writer at
// a time. Readers (Contains, Iterator) need none and may run concurrently with
// the writer: a node is fully built before a release store links it in, and
// readers follow links with acquire loads, so a reader sees either the whole
// node or none of it. Nodes are never freed while the SkipList lives.
#ifndef CAIRN_LSM_SKIPLIST_H_
#define CAIRN_LSM_SKIPLIST_H_

#include <atomic>
#include <cassert>
#include <cstdint>
#include <new>

#include "absl/random/random.h"
#include "lsm/arena.h"

namespace cairn::lsm {

template <typename Key, class Comparator>
class SkipList {
 private:
  struct Node;
  static constexpr int kMaxHeight = 12;

 public:
  // The arena must outlive the SkipList.
  SkipList(Comparator cmp, Arena* arena);
  SkipList(const SkipList&) = delete;
  SkipList& operator=(const SkipList&) = delete;

  // Inserts key and returns the entry now after it (null at the end). A
  // writer that needs the entry a new key precedes gets it without a second
  // search. REQUIRES: nothing equal to key is in the list; one writer.
  const Key* Insert(const Key& key);

  // True when an entry equal to key is in the list.
  bool Contains(const Key& key) const;

  // A search finger: the last node before the key of the previous search
  // through it, at each level. A search for a key after that one starts
  // from there, climbing only as high as the distance between the two keys
  // needs, instead of descending from the head: a run of keys in ascending
  // order (a sorted batch of lookups or inserts) costs about the gap between
  // neighbours each, and its nodes are still in the cache. A key at or
  // before the previous one searches from the head, as without a finger.
  // A finger belongs to one SkipList, and to one thread at a time.
  class Finger {
   public:
    Finger() = default;

   private:
    friend class SkipList;
    Node* prev_[kMaxHeight];
    int height_ = 0;  // the levels of prev_ that are set; 0: none yet
  };
  // The first entry >= key, or null.
  const Key* Seek(const Key& key) const {
    Node* const n = FindGreaterOrEqual(key, nullptr);
    return n == nullptr ? nullptr : &n->key;
  }
  // The same, found from *finger (which it moves).
  const Key* Seek(const Key& key, Finger* finger) const;
  // Insert, searching from *finger, which then stands at the new entry.
  // REQUIRES: as Insert; only this finger's inserts since its first search
  // (so that it knows every level).
  const Key* Insert(const Key& key, Finger* finger);

  // Iterator walks the list; it stays valid while the SkipList lives, and sees
  // entries inserted after it was created when it moves onto them.
  class Iterator {
   public:
    explicit Iterator(const SkipList* list) : list_(list) {}
    bool Valid() const { return node_ != nullptr; }
    // REQUIRES: Valid().
    const Key& key() const {
      assert(Valid());
      return node_->key;
    }
    // REQUIRES: Valid().
    void Next() {
      assert(Valid());
      node_ = node_->Next(0);
    }
    // REQUIRES: Valid(). Nodes have no back links, so this searches from the
    // head: O(log n) rather than O(1). Reverse scans are rare in a memtable.
    void Prev() {
      assert(Valid());
      node_ = list_->FindLess(node_->key, /*or_equal=*/false);
    }
    // Positions at the first entry >= target.
    void Seek(const Key& target) { node_ = list_->FindGreaterOrEqual(target, nullptr); }
    // Positions at the last entry <= target.
    void SeekForPrev(const Key& target) { node_ = list_->FindLess(target, /*or_equal=*/true); }
    void SeekToFirst() { node_ = list_->head_->Next(0); }
    void SeekToLast() { node_ = list_->FindLast(); }

   private:
    const SkipList* list_;
    Node* node_ = nullptr;
  };

 private:
  // Each level holds about 1/kBranching of the nodes of the level below.
  static constexpr uint32_t kBranching = 4;

  int GetMaxHeight() const { return max_height_.load(std::memory_order_relaxed); }
  Node* NewNode(const Key& key, int height);
  int RandomHeight();
  bool Equal(const Key& a, const Key& b) const { return compare_(a, b) == 0; }
  // True when key sorts after n's key (a null n is the end, after all).
  bool KeyIsAfterNode(const Key& key, Node* n) const {
    return n != nullptr && compare_(n->key, key) < 0;
  }
  // First node >= key, or null. Fills prev[level] with the last node < key at
  // each level when prev is non-null.
  Node* FindGreaterOrEqual(const Key& key, Node** prev) const;
  // FindGreaterOrEqual from finger, leaving in it the last node < key at
  // each of its levels.
  Node* FindFromFinger(const Key& key, Finger* finger) const;
  // Last node < key (<= key when or_equal), or null when there is none.
  Node* FindLess(const Key& key, bool or_equal) const;
  // Last node, or null when empty.
  Node* FindLast() const;
  // Links a new node for key in front of next, after prev[level] at each
  // level of its random height, and leaves the new node in those prev
  // slots. Returns next's key (null at the end).
  const Key* Link(const Key& key, Node* next, Node** prev);

  const Comparator compare_;
  Arena* const arena_;
  Node* const head_;
  // Only the writer changes it; readers tolerate a stale value, because a
  // taller-than-seen node's upper links are either null or fully built.
  std::atomic<int> max_height_{1};
  absl::InsecureBitGen rnd_;  // Used by the writer only.
};

// A node is the key followed, in the same arena allocation, by one link per
// level of its height (constructed in place by NewNode).
template <typename Key, class Comparator>
struct alignas(std::atomic<void*>) SkipList<Key, Comparator>::Node {
  explicit Node(const Key& k) : key(k) {}

  Node* Next(int n) { return link(n)->load(std::memory_order_acquire); }
  void SetNext(int n, Node* x) { link(n)->store(x, std::memory_order_release); }
  // Relaxed forms, for links no reader can reach yet.
  Node* NoBarrierNext(int n) { return link(n)->load(std::memory_order_relaxed); }
  void NoBarrierSetNext(int n, Node* x) { link(n)->store(x, std::memory_order_relaxed); }

  std::atomic<Node*>* link(int n) { return reinterpret_cast<std::atomic<Node*>*>(this + 1) + n; }

  const Key key;
};

template <typename Key, class Comparator>
typename SkipList<Key, Comparator>::Node* SkipList<Key, Comparator>::NewNode(const Key& key,
                                                                             int height) {
  static_assert(sizeof(Node) % alignof(std::atomic<Node*>) == 0);
  static_assert(alignof(Node) <= Arena::kAlignment);
  char* mem = arena_->AllocateAligned(sizeof(Node) + sizeof(std::atomic<Node*>) * height);
  Node* node = new (mem) Node(key);
  for (int i = 0; i < height; ++i) new (node->link(i)) std::atomic<Node*>(nullptr);
  return node;
}

template <typename Key, class Comparator>
SkipList<Key, Comparator>::SkipList(Comparator cmp, Arena* arena)
    : compare_(cmp), arena_(arena), head_(NewNode(Key(), kMaxHeight)) {}

template <typename Key, class Comparator>
int SkipList<Key, Comparator>::RandomHeight() {
  int height = 1;
  while (height < kMaxHeight && absl::Uniform<uint32_t>(rnd_, 0, kBranching) == 0) ++height;
  return height;
}

template <typename Key, class Comparator>
typename SkipList<Key, Comparator>::Node* SkipList<Key, Comparator>::FindGreaterOrEqual(
    const Key& key, Node** prev) const {
  Node* x = head_;
  int level = GetMaxHeight() - 1;
  while (true) {
    Node* next = x->Next(level);
    if (KeyIsAfterNode(key, next)) {
      x = next;
    } else {
      if (prev != nullptr) prev[level] = x;
      if (level == 0) return next;
      --level;
    }
  }
}

template <typename Key, class Comparator>
typename SkipList<Key, Comparator>::Node* SkipList<Key, Comparator>::FindFromFinger(
    const Key& key, Finger* finger) const {
  Node** const prev = finger->prev_;
  const int top = finger->height_ - 1;
  // The finger serves only a key after every node it holds; prev[0] is the
  // last of them. Otherwise, and when key lies beyond the next node even at
  // the finger's top level, a search from the head is the shorter one.
  bool from_head = top < 0 || (prev[0] != head_ && compare_(prev[0]->key, key) >= 0);
  int level = 0;
  if (!from_head) {
    // Climb while key lies beyond the next node at this level.
    while (level < top && KeyIsAfterNode(key, prev[level]->Next(level))) ++level;
    from_head = KeyIsAfterNode(key, prev[level]->Next(level));
  }
  if (from_head) {
    // Read first: the search below fills every level up to at least this
    // one (the height only grows).
    const int height = GetMaxHeight();
    Node* const next = FindGreaterOrEqual(key, prev);
    finger->height_ = height;
    return next;
  }
  // prev[level] is the last node < key at its level. The levels above keep
  // their nodes, which precede key too; for the writer's finger they are
  // still the last ones before it (each was the last before the previous
  // key, and its next node lies beyond prev[level]'s next, which is >= key),
  // as Link needs. Descend from prev[level].
  Node* x = prev[level];
  while (true) {
    Node* next = x->Next(level);
    if (KeyIsAfterNode(key, next)) {
      x = next;
    } else {
      prev[level] = x;
      if (level == 0) return next;
      --level;
    }
  }
}

template <typename Key, class Comparator>
const Key* SkipList<Key, Comparator>::Seek(const Key& key, Finger* finger) const {
  Node* const n = FindFromFinger(key, finger);
  return n == nullptr ? nullptr : &n->key;
}

template <typename Key, class Comparator>
typename SkipList<Key, Comparator>::Node* SkipList<Key, Comparator>::FindLess(const Key& key,
                                                                              bool or_equal) const {
  Node* x = head_;
  int level = GetMaxHeight() - 1;
  while (true) {
    Node* next = x->Next(level);
    const bool advance = next != nullptr &&
                         (or_equal ? compare_(next->key, key) <= 0 : compare_(next->key, key) < 0);
    if (advance) {
      x = next;
    } else if (level == 0) {
      return x == head_ ? nullptr : x;
    } else {
      --level;
    }
  }
}

template <typename Key, class Comparator>
typename SkipList<Key, Comparator>::Node* SkipList<Key, Comparator>::FindLast() const {
  Node* x = head_;
  int level = GetMaxHeight() - 1;
  while (true) {
    Node* next = x->Next(level);
    if (next != nullptr) {
      x = next;
    } else if (level == 0) {
      return x == head_ ? nullptr : x;
    } else {
      --level;
    }
  }
}

template <typename Key, class Comparator>
const Key* SkipList<Key, Comparator>::Insert(const Key& key) {
  Node* prev[kMaxHeight];
  Node* const next = FindGreaterOrEqual(key, prev);
  return Link(key, next, prev);
}

template <typename Key, class Comparator>
const Key* SkipList<Key, Comparator>::Insert(const Key& key, Finger* finger) {
  // A taller list than the finger knows (inserts that did not go through
  // it) leaves levels it has no node for: start over from the head.
  if (finger->height_ != GetMaxHeight()) finger->height_ = 0;
  Node* const next = FindFromFinger(key, finger);
  const Key* const after = Link(key, next, finger->prev_);
  // The new node is now the last one before any later key, at each of its
  // levels; Link has raised the height to cover them.
  finger->height_ = GetMaxHeight();
  return after;
}

template <typename Key, class Comparator>
const Key* SkipList<Key, Comparator>::Link(const Key& key, Node* next, Node** prev) {
  assert(next == nullptr || !Equal(key, next->key));
  const int height = RandomHeight();
  if (height > GetMaxHeight()) {
    for (int i = GetMaxHeight(); i < height; ++i) prev[i] = head_;
    // A reader that sees the new height before the node is linked finds null
    // links from head_ at the new levels and simply drops a level.
    max_height_.store(height, std::memory_order_relaxed);
  }

  Node* const x = NewNode(key, height);
  for (int i = 0; i < height; ++i) {
    // The new node's own links need no barrier: it is published by the
    // release store into prev[i] that follows.
    x->NoBarrierSetNext(i, prev[i]->NoBarrierNext(i));
    prev[i]->SetNext(i, x);
    prev[i] = x;  // for a finger: the last node before any later key
  }
  return next == nullptr ? nullptr : &next->key;
}

template <typename Key, class Comparator>
bool SkipList<Key, Comparator>::Contains(const Key& key) const {
  Node* x = FindGreaterOrEqual(key, nullptr);
  return x != nullptr && Equal(key, x->key);
}

}  // namespace cairn::lsm

#endif  // CAIRN_LSM_SKIPLIST_H_
