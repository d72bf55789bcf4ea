#include "shell/nftables.hh"

#include <nftables/libnftables.h>

#include "util/error.hh"

namespace tracemod {

OwnedNftTable::OwnedNftTable(const std::string& name, const std::string& body) : ctx_(nft_ctx_new(NFT_CTX_DEFAULT)) {
  if (!ctx_) throw Error("nftables: cannot create context");
  nft_ctx_buffer_error(ctx_);
  const std::string script = "add table inet " + name + " { flags owner; }\n" + body;
  if (nft_run_cmd_from_buffer(ctx_, script.c_str()) != 0) {
    std::string why = nft_ctx_get_error_buffer(ctx_);
    while (!why.empty() && (why.back() == '\n' || why.back() == ' ')) why.pop_back();
    if (auto nl = why.find('\n'); nl != std::string::npos) why.resize(nl);
    nft_ctx_free(ctx_);
    throw Error("install firewall table " + name + ": " + why);
  }
}

OwnedNftTable::~OwnedNftTable() {
  nft_ctx_free(ctx_);
}

}  // namespace tracemod
