// The OS objects the knob families' backends work through beyond files (netlink, XDP programs,
// NAPI kthreads), by type: the composition root (the daemon, a command) puts in what it has made,
// a family asks for the one it needs (`io.services.get<XdpSteering>()`) and refuses, naming what
// is missing, where it gets null. The core carries them without naming one.
#pragma once

#include <map>
#include <type_traits>
#include <typeindex>
#include <typeinfo>

namespace rxtune {

class Services {
public:
    // T is always given (with<NapiThreads>(&fake)): an object is found by the type its users ask
    // for, not by its own. A null one is left out.
    template <class T>
    Services& with(std::type_identity_t<T>* obj) {
        if (obj) objs_[std::type_index(typeid(T))] = obj;
        else objs_.erase(std::type_index(typeid(T)));
        return *this;
    }
    template <class T>
    T* get() const {
        auto it = objs_.find(std::type_index(typeid(T)));
        return it == objs_.end() ? nullptr : static_cast<T*>(it->second);
    }

private:
    std::map<std::type_index, void*> objs_;
};

}  // namespace rxtune
