// Values of types their owners declare, kept side by side by name: what a knob family read of a
// device or of the host, a family's profile section, what a family carries from run to run. The
// key carries the type: a family declares `inline constexpr Slot<RingsFacts> kRingsFacts{"rings"};`
// once, beside the type, and every reader and writer goes through that key, so no caller casts
// and no name can be read as a type other than the one its owner declared (a second declaration
// of the same name with another type stops the program at its first use, naming both).
// Core holds the values without knowing any family's type, which is what lets a family add its
// facts, its section and its memory from its own unit.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <typeinfo>
#include <utility>

namespace rxtune {

template <class T>
struct Slot {
    std::string_view name;
};

class Slots {
public:
    Slots() = default;
    Slots(const Slots& o) {
        for (const auto& [k, b] : o.boxes_) boxes_.emplace(k, b->clone());
    }
    Slots& operator=(const Slots& o) {
        if (this != &o) {
            Slots copy(o);
            boxes_.swap(copy.boxes_);
        }
        return *this;
    }
    Slots(Slots&&) noexcept = default;
    Slots& operator=(Slots&&) noexcept = default;

    // Sets the slot's value, replacing one there was.
    template <class T>
    T& set(Slot<T> s, T v) {
        auto box = std::make_unique<Held<T>>(std::move(v));
        T& out = box->value;
        boxes_.insert_or_assign(std::string(s.name), std::move(box));
        return out;
    }
    // The slot's value, or null where none is set.
    template <class T>
    const T* get(Slot<T> s) const {
        auto it = boxes_.find(s.name);
        return it == boxes_.end() ? nullptr : open<T>(s.name, *it->second);
    }
    template <class T>
    T* get(Slot<T> s) {
        auto it = boxes_.find(s.name);
        return it == boxes_.end() ? nullptr : open<T>(s.name, *it->second);
    }
    // The slot's value, a default T set first where there is none.
    template <class T>
    T& emplace(Slot<T> s) {
        if (T* v = get(s)) return *v;
        return set(s, T{});
    }

    bool has(std::string_view name) const { return boxes_.find(name) != boxes_.end(); }
    void erase(std::string_view name) {
        auto it = boxes_.find(name);
        if (it != boxes_.end()) boxes_.erase(it);
    }
    bool empty() const { return boxes_.empty(); }
    std::size_t size() const { return boxes_.size(); }
    // o's value of `name` (of whatever type its owner declared) copied here, replacing ours.
    void copyFrom(const Slots& o, std::string_view name) {
        auto it = o.boxes_.find(name);
        if (it != o.boxes_.end()) boxes_.insert_or_assign(std::string(name), it->second->clone());
    }

private:
    struct Box {
        virtual ~Box() = default;
        virtual std::unique_ptr<Box> clone() const = 0;
        virtual const std::type_info& type() const = 0;
    };
    template <class T>
    struct Held final : Box {
        explicit Held(T v) : value(std::move(v)) {}
        std::unique_ptr<Box> clone() const override { return std::make_unique<Held<T>>(value); }
        const std::type_info& type() const override { return typeid(T); }
        T value;
    };
    template <class T>
    static T* open(std::string_view name, Box& b) {
        if (b.type() != typeid(T)) {
            std::fprintf(stderr, "rxtune: slot '%.*s' holds %s, read as %s: two owners declared it\n",
                         static_cast<int>(name.size()), name.data(), b.type().name(), typeid(T).name());
            std::abort();
        }
        return &static_cast<Held<T>&>(b).value;
    }
    template <class T>
    static const T* open(std::string_view name, const Box& b) {
        return open<T>(name, const_cast<Box&>(b));
    }

    std::map<std::string, std::unique_ptr<Box>, std::less<>> boxes_;
};

}  // namespace rxtune
