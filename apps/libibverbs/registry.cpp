// The program's CQs and SRQs by handle (objects.h).
#include <map>
#include <mutex>

#include "apps/libibverbs/objects.h"

namespace hcasim::lib {

namespace {

std::mutex g_lock;

template <class T>
std::map<uint32_t, T*>& table() {
    static std::map<uint32_t, T*> objects;
    return objects;
}
template <class T>
void put(T* o, bool present) {
    std::lock_guard<std::mutex> lock(g_lock);
    if (present)
        table<T>()[o->handle] = o;
    else
        table<T>().erase(o->handle);
}
template <class T>
T* find(uint32_t handle) {
    std::lock_guard<std::mutex> lock(g_lock);
    auto it = table<T>().find(handle);
    return it == table<T>().end() ? nullptr : it->second;
}

}  // namespace

void remember(ibv_cq* cq) {
    put(cq, true);
}
void forget(ibv_cq* cq) {
    put(cq, false);
}
ibv_cq* cq_by_handle(uint32_t handle) {
    return find<ibv_cq>(handle);
}
void remember(ibv_srq* srq) {
    put(srq, true);
}
void forget(ibv_srq* srq) {
    put(srq, false);
}
ibv_srq* srq_by_handle(uint32_t handle) {
    return find<ibv_srq>(handle);
}

}  // namespace hcasim::lib
