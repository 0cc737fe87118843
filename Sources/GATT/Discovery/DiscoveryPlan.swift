import ATT
import Bluetooth

/// The arithmetic of ``DatabaseDiscovery``'s descriptor phase: which Find Information ranges
/// to ask for, and which learned attributes are a characteristic's descriptors.
enum DiscoveryPlan {
    /// Entries of 16-bit types one Find Information Response holds at `mtu` (§3.4.3.2:
    /// opcode, format, then 4 octets per entry).
    static func entriesPerResponse(mtu: Int) -> Int { max(1, (mtu - 2) / 4) }

    /// Responses needed for `range` when every attribute in it has a 16-bit type.
    static func cost(_ range: ClosedRange<UInt16>, mtu: Int) -> Int {
        let per = entriesPerResponse(mtu: mtu)
        let span = Int(range.upperBound) - Int(range.lowerBound) + 1
        return (span + per - 1) / per
    }

    /// Merges neighbouring `gaps` (sorted, disjoint) into fewer runs where the handles between
    /// them all have 16-bit types (`isShortType`) and the merged run needs fewer responses
    /// than the runs apart.
    static func informationRuns(
        gaps: [ClosedRange<UInt16>], mtu: Int, isShortType: (UInt16) -> Bool
    ) -> [ClosedRange<UInt16>] {
        var runs: [(range: ClosedRange<UInt16>, cost: Int)] = []
        for gap in gaps.sorted(by: { $0.lowerBound < $1.lowerBound }) {
            let gapCost = cost(gap, mtu: mtu)
            if let last = runs.last, last.range.upperBound < gap.lowerBound {
                let between = (last.range.upperBound + 1)..<gap.lowerBound
                let merged = last.range.lowerBound...gap.upperBound
                let mergedCost = cost(merged, mtu: mtu)
                if mergedCost < last.cost + gapCost, between.allSatisfy(isShortType) {
                    runs[runs.count - 1] = (merged, mergedCost)
                    continue
                }
            }
            runs.append((gap, gapCost))
        }
        return runs.map(\.range)
    }

    /// `range` minus the `covered` ranges, as sorted disjoint ranges.
    static func subtract(_ covered: [ClosedRange<UInt16>], from range: ClosedRange<UInt16>) -> [ClosedRange<UInt16>] {
        var pieces = [range]
        for cut in covered {
            var next: [ClosedRange<UInt16>] = []
            for piece in pieces {
                guard piece.overlaps(cut) else {
                    next.append(piece)
                    continue
                }
                if piece.lowerBound < cut.lowerBound { next.append(piece.lowerBound...(cut.lowerBound - 1)) }
                if piece.upperBound > cut.upperBound { next.append((cut.upperBound + 1)...piece.upperBound) }
            }
            pieces = next
        }
        return pieces
    }

    /// Attribute types that start a new definition.
    static let declarationTypes: Set<BluetoothUUID> = [
        GATTUUID.primaryService, GATTUUID.secondaryService, GATTUUID.include, GATTUUID.characteristic,
    ]

    /// The descriptors of `characteristic` among the learned `types`: the attributes after its
    /// value up to its end, stopping at any declaration (§4.7.1).
    static func descriptors(of characteristic: Characteristic, types: [UInt16: BluetoothUUID]) -> [Descriptor] {
        guard let range = characteristic.descriptorRange else { return [] }
        var out: [Descriptor] = []
        for (handle, uuid) in types.filter({ range.contains($0.key) }).sorted(by: { $0.key < $1.key }) {
            if declarationTypes.contains(uuid) { break }
            out.append(Descriptor(handle: handle, uuid: uuid))
        }
        return out
    }
}
