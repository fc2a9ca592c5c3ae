#include "casper400g_rx/errors.h"

#include <cstring>

namespace casper400g_rx {

os_error::os_error(int err, const std::string &what) : std::runtime_error(what), code_(err) {}

void throw_errno(const std::string &doing, int err) {
    throw os_error(err, doing + ": " + std::strerror(err));
}

}  // namespace casper400g_rx
