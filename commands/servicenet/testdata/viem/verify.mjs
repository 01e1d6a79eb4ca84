// Checks an EIP-3009 TransferWithAuthorization signature made by civnode's
// EVMWallet with viem, the EVM library the x402 reference client signs with.
//
// stdin: {"domain": {name, version, chainId, verifyingContract},
//         "message": {from, to, value, validAfter, validBefore, nonce},
//         "signature": "0x…", "address": "0x…"}
// Integers may be JSON numbers or decimal strings.
//
// stdout: {"recovered": "0x…", "valid": bool, "hash": "0x…"}
// exit 0 when viem recovers `address` and verifyTypedData accepts it, 1 when
// it does not, 2 on bad input.
//
// The types are written here, not taken from the input, so the check does
// not depend on what the Go side thinks EIP-3009 is.
import { hashTypedData, recoverTypedDataAddress, verifyTypedData, isAddressEqual } from "viem";

const types = {
  TransferWithAuthorization: [
    { name: "from", type: "address" },
    { name: "to", type: "address" },
    { name: "value", type: "uint256" },
    { name: "validAfter", type: "uint256" },
    { name: "validBefore", type: "uint256" },
    { name: "nonce", type: "bytes32" },
  ],
};

async function readStdin() {
  const chunks = [];
  for await (const chunk of process.stdin) chunks.push(chunk);
  return Buffer.concat(chunks).toString("utf8");
}

async function main() {
  let input;
  try {
    input = JSON.parse(await readStdin());
  } catch (err) {
    console.error(`verify.mjs: bad input: ${err.message}`);
    process.exit(2);
  }
  const { domain: d, message: m, signature, address } = input;
  const domain = {
    name: d.name,
    version: d.version,
    chainId: BigInt(d.chainId),
    verifyingContract: d.verifyingContract,
  };
  const message = {
    from: m.from,
    to: m.to,
    value: BigInt(m.value),
    validAfter: BigInt(m.validAfter),
    validBefore: BigInt(m.validBefore),
    nonce: m.nonce,
  };
  const typed = { domain, types, primaryType: "TransferWithAuthorization", message };

  const hash = hashTypedData(typed);
  const recovered = await recoverTypedDataAddress({ ...typed, signature });
  const valid = await verifyTypedData({ ...typed, address, signature });
  process.stdout.write(JSON.stringify({ recovered, valid, hash }) + "\n");
  process.exit(valid && isAddressEqual(recovered, address) ? 0 : 1);
}

main().catch((err) => {
  console.error(`verify.mjs: ${err.stack ?? err}`);
  process.exit(2);
});
