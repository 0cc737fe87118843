import ATT
import Bluetooth

/// The characteristic-declaration sweep of ``DatabaseDiscovery``: Read By Type Requests for
/// «Characteristic» over a handle range that spans many services (§4.6.1 applied to the whole
/// range at once), each starting after the last value handle received.
///
/// Unlike ``DiscoverAllCharacteristics`` it may leave the tail of its range open: when a
/// response was cut short (another entry of its size would have fitted, so the server stopped
/// at the end of its declarations or at a UUID of another size) and its last characteristic
/// belongs to the range's final service, the request that would only confirm "no more
/// declarations" is not sent. The tail (after that value handle) is that characteristic's
/// descriptor range, which Find Information covers anyway; a characteristic declaration found
/// there resumes the sweep.
struct CharacteristicSweep: Hashable, Sendable {
    let range: ClosedRange<UInt16>
    /// Where the range's final service starts (nil: no early stop).
    let finalServiceStart: UInt16?
    private(set) var found: [Characteristic] = []
    /// The handles after the last value the sweep did not ask about, when it stopped early.
    private(set) var openTail: ClosedRange<UInt16>?

    init(range: ClosedRange<UInt16>, finalServiceStart: UInt16?) {
        self.range = range
        self.finalServiceStart = finalServiceStart
    }

    enum Next: Hashable, Sendable {
        case send(ATTPDU)
        case done
        case fail(GATTError)
    }

    func request(from start: UInt16) -> Next {
        .send(
            .readByTypeRequest(
                ReadByTypeRequest(
                    startingHandle: start, endingHandle: range.upperBound, attributeType: GATTUUID.characteristic)
            ))
    }

    mutating func start() -> Next { request(from: range.lowerBound) }

    mutating func receive(_ pdu: ATTPDU, mtu: Int) -> Next {
        if let error = checkLength(pdu, mtu: mtu) { return .fail(error) }
        switch pdu {
        case .readByTypeResponse(let response):
            var entrySize = 0
            for entry in response.entries {
                if let error = accept(entry, opcode: pdu.opcode) { return .fail(error) }
                entrySize = 2 + entry.value.count
            }
            guard let last = found.last else { return .done }
            guard last.valueHandle < range.upperBound else { return .done }
            let full = 2 + (response.entries.count + 1) * entrySize > mtu
            if !full, let finalServiceStart, last.declarationHandle >= finalServiceStart {
                openTail = (last.valueHandle + 1)...range.upperBound
                return .done
            }
            return request(from: last.valueHandle + 1)
        case .errorResponse(let error)
        where error.requestOpcode == .readByTypeRequest && error.errorCode == .attributeNotFound:
            return .done
        case .errorResponse(let error):
            return .fail(errorFor(error, request: .readByTypeRequest))
        default:
            return .fail(.unexpectedResponse(request: .readByTypeRequest, received: pdu.opcode))
        }
    }

    private mutating func accept(_ entry: ReadByTypeResponse.AttributeData, opcode: ATTOpcode) -> GATTError? {
        do {
            found.append(try Characteristic.declared(by: entry, in: range, after: found.last?.valueHandle, opcode: opcode))
            return nil
        } catch {
            return error
        }
    }
}

/// One Find Information run of ``DatabaseDiscovery`` (§4.7.1 over a range that may hold
/// several characteristics' descriptor gaps): collects the type of every attribute in the
/// range, each request starting after the last handle received, until the range is covered
/// or Attribute Not Found.
struct InformationRun: Hashable, Sendable {
    let range: ClosedRange<UInt16>
    private(set) var cursor: HandleCursor
    /// (handle, type) in handle order.
    private(set) var entries: [FindInformationResponse.Information] = []
    /// The handles answered for so far (a response covers from its request's start to its
    /// last entry; Attribute Not Found covers the rest of the range).
    private(set) var covered: ClosedRange<UInt16>?
    private var requestStart: UInt16

    init(range: ClosedRange<UInt16>) {
        self.range = range
        cursor = HandleCursor(range: range)
        requestStart = range.lowerBound
    }

    enum Next: Hashable, Sendable {
        case send(ATTPDU)
        case done
        case fail(GATTError)
    }

    mutating func start() -> Next { next() }

    private mutating func next() -> Next {
        guard let start = cursor.nextStart else { return .done }
        requestStart = start
        return .send(
            .findInformationRequest(FindInformationRequest(startingHandle: start, endingHandle: range.upperBound)))
    }

    private mutating func cover(through end: UInt16) {
        covered = range.lowerBound...end
    }

    mutating func receive(_ pdu: ATTPDU, mtu: Int) -> Next {
        if let error = checkLength(pdu, mtu: mtu) { return .fail(error) }
        switch pdu {
        case .findInformationResponse(let response):
            for entry in response.entries {
                if let error = cursor.accept(entry.handle, through: entry.handle, opcode: pdu.opcode) {
                    return .fail(error)
                }
                entries.append(entry)
            }
            if let last = cursor.last { cover(through: last) }
            return next()
        case .errorResponse(let error)
        where error.requestOpcode == .findInformationRequest && error.errorCode == .attributeNotFound:
            cover(through: range.upperBound)
            return .done
        case .errorResponse(let error):
            return .fail(errorFor(error, request: .findInformationRequest))
        default:
            return .fail(.unexpectedResponse(request: .findInformationRequest, received: pdu.opcode))
        }
    }
}
