import Bluetooth

/// Joins the fragments of extended advertising data (sans-I/O, a value type).
///
/// A controller reports long advertising data (AUX_CHAIN_IND chains) as several extended reports
/// from the same advertiser and SID: every fragment but the last has data status 0b01
/// ("incomplete, more data to come"); the last has 0b00 (complete) or 0b10 (truncated). Feed each
/// report to `receive(_:)`; a whole report comes out when its chain ends, with the data of every
/// fragment concatenated and the last fragment's data status (so a truncated chain stays marked
/// truncated). Header fields come from the first fragment, the RSSI from the last.
///
/// Bounded: a chain longer than `maxDataLength` (1650 octets, the longest advertising data, Core
/// Spec 5.4, Vol 4, Part E, §7.8.54) is dropped; at most `maxChains` chains are pending at once
/// (the oldest is dropped); a pending chain is dropped when a report from the same advertiser and
/// SID with different event properties (a new chain, e.g. its scan response) arrives.
/// - SeeAlso: Core Spec 5.4, Vol 4, Part E, §7.7.65.13; Vol 6, Part B, §4.4.2.2
public struct ExtendedAdvertisingReassembler: Hashable, Sendable {
    /// An advertiser's chain: Address_Type, Address and Advertising_SID.
    public struct ChainKey: Hashable, Sendable, CustomStringConvertible {
        public var addressType: LEAddressType
        public var address: BluetoothAddress
        public var advertisingSID: UInt8

        public init(addressType: LEAddressType, address: BluetoothAddress, advertisingSID: UInt8) {
            self.addressType = addressType
            self.address = address
            self.advertisingSID = advertisingSID
        }

        public init(_ report: LEExtendedAdvertisingReport) {
            self.init(addressType: report.addressType, address: report.address, advertisingSID: report.advertisingSID)
        }

        public var description: String { "\(address) (\(addressType)) SID \(advertisingSID)" }
    }

    public enum DropReason: Hashable, Sendable {
        /// A new chain for the same advertiser and SID started before this one ended.
        case superseded
        /// The data would exceed `maxDataLength`.
        case lengthExceeded
        /// `maxChains` chains were pending; this was the oldest.
        case tooManyChains
        /// `reset()` was called.
        case reset
    }

    public enum Output: Hashable, Sendable {
        /// A whole report: a single complete fragment, or a finished chain.
        case report(LEExtendedAdvertisingReport)
        /// A pending chain was discarded; its fragments are lost.
        case dropped(ChainKey, DropReason)
    }

    private struct Chain: Hashable, Sendable {
        var report: LEExtendedAdvertisingReport
        /// After `lengthExceeded`: the rest of the chain is skipped until its last fragment.
        var discarding: Bool
        var sequence: UInt64
    }

    public let maxDataLength: Int
    public let maxChains: Int
    private var chains: [ChainKey: Chain] = [:]
    private var nextSequence: UInt64 = 0

    public init(maxDataLength: Int = 1650, maxChains: Int = 16) {
        self.maxDataLength = maxDataLength
        self.maxChains = max(1, maxChains)
    }

    /// Chains waiting for more fragments.
    public var pendingCount: Int { chains.values.filter { !$0.discarding }.count }

    /// Feeds one report; returns what it completes or discards, in order.
    public mutating func receive(_ report: LEExtendedAdvertisingReport) -> [Output] {
        let key = ChainKey(report)
        let moreToCome = report.dataStatus == .incompleteMoreData
        var outputs: [Output] = []

        if var chain = chains[key] {
            if Self.properties(chain.report.eventType) != Self.properties(report.eventType) {
                // A different kind of report from this advertiser: a new chain begins.
                chains[key] = nil
                if !chain.discarding { outputs.append(.dropped(key, .superseded)) }
            } else if chain.discarding {
                if !moreToCome { chains[key] = nil }
                return outputs
            } else if chain.report.data.count + report.data.count > maxDataLength {
                outputs.append(.dropped(key, .lengthExceeded))
                if moreToCome {
                    chain.discarding = true
                    chain.report.data = []
                    chains[key] = chain
                } else {
                    chains[key] = nil
                }
                return outputs
            } else {
                chain.report.data.append(contentsOf: report.data)
                chain.report.rssi = report.rssi
                chain.report.eventType.dataStatus = report.dataStatus
                if moreToCome {
                    chains[key] = chain
                } else {
                    chains[key] = nil
                    outputs.append(.report(chain.report))
                }
                return outputs
            }
        }

        guard moreToCome else {
            outputs.append(.report(report))
            return outputs
        }
        if report.data.count > maxDataLength {
            outputs.append(.dropped(key, .lengthExceeded))
            chains[key] = Chain(report: report, discarding: true, sequence: takeSequence())
            chains[key]?.report.data = []
        } else {
            chains[key] = Chain(report: report, discarding: false, sequence: takeSequence())
        }
        while chains.count > maxChains, let oldest = chains.min(by: { $0.value.sequence < $1.value.sequence }) {
            chains[oldest.key] = nil
            if !oldest.value.discarding { outputs.append(.dropped(oldest.key, .tooManyChains)) }
        }
        return outputs
    }

    /// Discards every pending chain (e.g. when scanning stops).
    public mutating func reset() -> [Output] {
        let pending = chains.filter { !$0.value.discarding }.sorted { $0.value.sequence < $1.value.sequence }
        chains = [:]
        return pending.map { .dropped($0.key, .reset) }
    }

    private mutating func takeSequence() -> UInt64 {
        defer { nextSequence &+= 1 }
        return nextSequence
    }

    /// Event type without the data status bits.
    private static func properties(_ type: LEExtendedAdvertisingEventType) -> UInt16 { type.rawValue & ~0x0060 }
}
