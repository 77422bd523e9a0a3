#include "host/verbs.h"

#include <cerrno>
#include <utility>

namespace hcasim {

std::string errno_name(int err) {
    static const std::pair<int, const char*> names[] = {
        {EPERM, "EPERM"},           {ENOENT, "ENOENT"},       {EIO, "EIO"},
        {EAGAIN, "EAGAIN"},         {ENOMEM, "ENOMEM"},       {EACCES, "EACCES"},
        {EFAULT, "EFAULT"},         {EBUSY, "EBUSY"},         {EEXIST, "EEXIST"},
        {ENODEV, "ENODEV"},         {EINVAL, "EINVAL"},       {ENOSPC, "ENOSPC"},
        {ERANGE, "ERANGE"},         {EOVERFLOW, "EOVERFLOW"}, {ENOSYS, "ENOSYS"},
        {EOPNOTSUPP, "EOPNOTSUPP"}, {ETIMEDOUT, "ETIMEDOUT"}, {ECONNREFUSED, "ECONNREFUSED"},
    };
    if (err == 0) return "";
    for (const auto& [value, name] : names) {
        if (value == err) return name;
    }
    return "E" + std::to_string(err);
}

bool access_from_name(const std::string& name, uint8_t& bits) {
    static const std::pair<const char*, uint8_t> names[] = {
        {"local_write", hca_if::access::local_write},
        {"remote_write", hca_if::access::remote_write},
        {"remote_read", hca_if::access::remote_read},
        {"remote_atomic", hca_if::access::remote_atomic},
        {"mw_bind", hca_if::access::mw_bind},
        {"zero_based", hca_if::access::zero_based},
        {"on_demand", hca_if::access::on_demand},
    };
    for (const auto& [n, b] : names) {
        if (name == n) {
            bits |= b;
            return true;
        }
    }
    return false;
}

}  // namespace hcasim
