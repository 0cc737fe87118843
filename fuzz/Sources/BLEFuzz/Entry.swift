// libFuzzer entry points. One executable holds every target; the environment variable
// BLEFUZZ_TARGET picks one (fuzz/run.sh sets it). Each target's invariant is written beside it
// in `FuzzTargets.all`; a violated invariant aborts, which libFuzzer reports as a crash and
// saves the input.
#if canImport(Glibc)
    import Glibc
#endif

import Capture
import CFuzzDriver

/// The program's entry point. SwiftPM links an executable's `main` to `<module>_main`, so the
/// module defines that symbol itself and hands over to libFuzzer's driver.
@_cdecl("BLEFuzz_main")
public func fuzzMain(
    _ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?
) -> CInt {
    var argc = argc
    var argv = argv
    return LLVMFuzzerRunDriver(&argc, &argv) { data, size in fuzzTestOneInput(data, size) }
}

/// The selected target, set once in `LLVMFuzzerInitialize` before any input runs.
nonisolated(unsafe) var selectedTarget: FuzzTarget?

@_cdecl("LLVMFuzzerInitialize")
public func fuzzInitialize(
    _ argc: UnsafeMutablePointer<CInt>?, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>?
) -> CInt {
    let name = getenv("BLEFUZZ_TARGET").map { String(cString: $0) } ?? ""
    if name == "list" {
        for target in FuzzTargets.all { print("\(target.name)\t\(target.invariant)") }
        exit(0)
    }
    guard let target = FuzzTargets.all.first(where: { $0.name == name }) else {
        print("BLEFUZZ_TARGET must name a target; BLEFUZZ_TARGET=list lists them")
        exit(2)
    }
    selectedTarget = target
    return 0
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzTestOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes: [UInt8] = size == 0 || data == nil ? [] : Array(UnsafeBufferPointer(start: data, count: size))
    selectedTarget?.run(bytes)
    return 0
}

/// One fuzz target: its name, the invariant it checks, and the function that checks it.
struct FuzzTarget: Sendable {
    let name: String
    let invariant: String
    let run: @Sendable ([UInt8]) -> Void
}

/// Aborts (a libFuzzer finding) when `condition` is false.
func require(_ condition: @autoclosure () -> Bool, _ message: @autoclosure () -> String) {
    if !condition() {
        let text = Array("INVARIANT VIOLATED: \(message())\n".utf8)
        _ = text.withUnsafeBytes { write(2, $0.baseAddress, $0.count) }
        abort()
    }
}

/// Splits a fuzz input into the pieces a target needs, never trapping when it runs dry.
struct FuzzInput {
    private let bytes: [UInt8]
    private var index = 0

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    var isEmpty: Bool { index >= bytes.count }
    var remaining: Int { bytes.count - index }

    mutating func byte() -> UInt8 {
        guard index < bytes.count else { return 0 }
        defer { index += 1 }
        return bytes[index]
    }

    mutating func uint16() -> UInt16 { UInt16(byte()) | UInt16(byte()) << 8 }

    mutating func take(_ count: Int) -> [UInt8] {
        let end = min(bytes.count, index + max(0, count))
        defer { index = end }
        return Array(bytes[index..<end])
    }

    /// A chunk prefixed by its one-octet length.
    mutating func chunk() -> [UInt8] { take(Int(byte())) }

    /// A chunk prefixed by a two-octet length, capped at `limit`.
    mutating func longChunk(limit: Int = 4096) -> [UInt8] { take(min(Int(uint16()), limit)) }

    mutating func rest() -> [UInt8] { take(remaining) }
}

enum FuzzTargets {
    static let all: [FuzzTarget] = [
        FuzzTarget(
            name: "hci-event", invariant: "HCIEvent/HCIPacket decode: typed error or a value that encodes and decodes back equal",
            run: HCIFuzz.event),
        FuzzTarget(
            name: "acl-l2cap", invariant: "ACL + L2CAP reassembly (reassembler, UserSpaceL2CAP): no trap, partial frames and frame length bounded",
            run: L2CAPFuzz.aclReassembly),
        FuzzTarget(
            name: "ad", invariant: "AD structures: every element lies inside the input; well-formed data re-encodes to equal structures",
            run: HCIFuzz.advertisingData),
        FuzzTarget(
            name: "ext-adv", invariant: "extended-report reassembly: pending chains ≤ maxChains, reassembled data ≤ maxDataLength",
            run: HCIFuzz.extendedReassembly),
        FuzzTarget(
            name: "att-pdu", invariant: "every ATT PDU decode: typed error, or decode→encode→decode equal with encodedLength = octets",
            run: ATTFuzz.pdu),
        FuzzTarget(
            name: "att-bearer-client", invariant: "ATT bearer, client role: one completion per transaction, SDUs ≤ ATT_MTU, close once, nothing pending after close",
            run: { ATTFuzz.bearer($0, server: false) }),
        FuzzTarget(
            name: "att-bearer-server", invariant: "ATT bearer, server role: same as client role, requests answered one at a time",
            run: { ATTFuzz.bearer($0, server: true) }),
        FuzzTarget(
            name: "gatt-client", invariant: "GATT client procedures: requests fit ATT_MTU, done/fail is final, Attribute Not Found answers end it within a bound",
            run: GATTFuzz.clientProcedure),
        FuzzTarget(
            name: "gatt-server", invariant: "GATT server: never returns or changes an attribute the permissions forbid; every response fits ATT_MTU",
            run: GATTFuzz.server),
        FuzzTarget(
            name: "capture", invariant: "btsnoop/pcap/pcapng readers + CaptureDecoder: typed error or records within the file, record count bounded; dump --summary's in-place counts (count, countAll) equal the full decode's",
            run: HCIFuzz.capture),
        FuzzTarget(
            name: "h4", invariant: "H4 stream framing: packets are whole and parse or fail typed; buffer bounded; a failure is sticky",
            run: HCIFuzz.h4),
        FuzzTarget(
            name: "le-signaling", invariant: "LE signaling codec + responder + credit-based tracker: typed error, responses fit the signaling MTU",
            run: L2CAPFuzz.signaling),
        FuzzTarget(
            name: "ecfc", invariant: "enhanced credit-based channels: dynamic CIDs only, credits ≤ 65535, K-frames within the MPS, SDUs within the MTU",
            run: L2CAPFuzz.creditBasedChannels),
        FuzzTarget(
            name: "smp", invariant: "SMP responder and PDU codecs: typed error or round-trip, never pairs (always Pairing Failed or ignore)",
            run: L2CAPFuzz.securityManager),
        FuzzTarget(
            name: "smp-codec", invariant: "every SMP command: typed error or a round trip to the same octets",
            run: SecurityFuzz.codec),
        FuzzTarget(
            name: "pairing", invariant: "pairing initiator vs a hostile peer: sent PDUs decode, keys only after encryption, one end, silence after it",
            run: SecurityFuzz.initiator),
        FuzzTarget(
            name: "pairing-responder", invariant: "pairing responder vs a hostile central: sent PDUs decode, keys only after encryption, one end",
            run: SecurityFuzz.responder),
        FuzzTarget(
            name: "cli", invariant: "CLI argument parser: an Invocation or a UsageError, never a trap",
            run: CLIFuzz.parseArguments),
    ]
}
