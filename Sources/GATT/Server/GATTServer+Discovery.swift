import ATT
import Bluetooth

/// The server side of the discovery requests: Find Information, Find By Type Value, Read By
/// Type and Read By Group Type. Each response carries as many entries as ATT_MTU allows, all
/// of one format or length; an empty result is Attribute Not Found on the Starting Handle.
/// - SeeAlso: Core Spec 5.4, Vol 3, Part F, §3.4.3.1–§3.4.3.4, §3.4.4.1, §3.4.4.9
extension GATTServer {
    /// Longest value in one Read By Type entry: ATT_MTU − 4, and the one-octet Length field
    /// (2 + value ≤ 255) caps it at 253.
    static func readByTypeValueLimit(mtu: Int) -> Int { min(mtu - 4, 253) }

    /// Longest value in one Read By Group Type entry: ATT_MTU − 6, at most 251.
    static func readByGroupTypeValueLimit(mtu: Int) -> Int { min(mtu - 6, 251) }

    /// §3.4.3.1/§3.4.3.2: handle–type pairs; one UUID size per response, stopping at the first
    /// attribute of the other size.
    func findInformation(_ request: FindInformationRequest, _ client: ClientID) -> ATTPDU {
        let mtu = state(client).mtu
        let candidates = database.attributes(in: request.startingHandle...request.endingHandle)
        guard let first = candidates.first else {
            return error(FindInformationRequest.opcode, request.startingHandle, .attributeNotFound)
        }
        let short = first.hasShortType
        let entrySize = short ? 4 : 18
        let capacity = (mtu - 2) / entrySize
        var entries: [FindInformationResponse.Information] = []
        for attribute in candidates {
            guard attribute.hasShortType == short, entries.count < capacity else { break }
            let uuid: BluetoothUUID = short ? attribute.type.shortened : .bit128(attribute.type.uuid128)
            entries.append(FindInformationResponse.Information(handle: attribute.handle, uuid: uuid))
        }
        return .findInformationResponse(FindInformationResponse(format: short ? .uuid16 : .uuid128, entries: entries))
    }

    /// §3.4.3.3/§3.4.3.4: attributes of a 16-bit type whose value equals the given one, with
    /// their group end (the handle itself for a non-grouping attribute). Attributes the
    /// client may not read are not compared.
    func findByTypeValue(_ request: FindByTypeValueRequest, _ client: ClientID) -> ATTPDU {
        let client = state(client)
        let type = BluetoothUUID.bit16(request.attributeType)
        let capacity = (client.mtu - 1) / 4
        var entries: [FindByTypeValueResponse.HandlesInformation] = []
        for attribute in database.attributes(in: request.startingHandle...request.endingHandle)
        where attribute.type == type {
            guard entries.count < capacity else { break }
            guard attribute.permissions.readError(at: client.security, authorized: client.authorized) == nil,
                currentValue(attribute, client) == request.attributeValue
            else { continue }
            entries.append(
                FindByTypeValueResponse.HandlesInformation(
                    foundAttributeHandle: attribute.handle, groupEndHandle: attribute.groupEndHandle))
        }
        guard !entries.isEmpty else {
            return error(FindByTypeValueRequest.opcode, request.startingHandle, .attributeNotFound)
        }
        return .findByTypeValueResponse(FindByTypeValueResponse(entries: entries))
    }

    /// §3.4.4.1/§3.4.4.2: handle–value pairs of one type, values of one length (truncated to
    /// `readByTypeValueLimit`). An attribute that would get an error ends the list; when it is
    /// the first, its error is the answer (with its handle).
    func readByType(_ request: ReadByTypeRequest, _ client: ClientID) -> ATTPDU {
        let client = state(client)
        let limit = Self.readByTypeValueLimit(mtu: client.mtu)
        var entries: [ReadByTypeResponse.AttributeData] = []
        var used = 2
        for attribute in database.attributes(in: request.startingHandle...request.endingHandle)
        where attribute.type == request.attributeType {
            if let code = attribute.permissions.readError(at: client.security, authorized: client.authorized) {
                if entries.isEmpty { return error(ReadByTypeRequest.opcode, attribute.handle, code) }
                break
            }
            let value = Array(currentValue(attribute, client).prefix(limit))
            if let length = entries.first?.value.count, length != value.count { break }
            guard used + 2 + value.count <= client.mtu else { break }
            used += 2 + value.count
            entries.append(ReadByTypeResponse.AttributeData(handle: attribute.handle, value: value))
        }
        guard !entries.isEmpty else {
            return error(ReadByTypeRequest.opcode, request.startingHandle, .attributeNotFound)
        }
        return .readByTypeResponse(ReadByTypeResponse(entries: entries))
    }

    /// §3.4.4.9/§3.4.4.10: service declarations (the only grouping types GATT defines: a
    /// Primary or Secondary Service; any other type is Unsupported Group Type) with their
    /// End Group Handle, values of one length.
    func readByGroupType(_ request: ReadByGroupTypeRequest, _ client: ClientID) -> ATTPDU {
        let client = state(client)
        let type = request.attributeGroupType
        guard type == GATTUUID.primaryService || type == GATTUUID.secondaryService else {
            return error(ReadByGroupTypeRequest.opcode, request.startingHandle, .unsupportedGroupType)
        }
        let limit = Self.readByGroupTypeValueLimit(mtu: client.mtu)
        var entries: [ReadByGroupTypeResponse.AttributeData] = []
        var used = 2
        for attribute in database.attributes(in: request.startingHandle...request.endingHandle)
        where attribute.type == type {
            if let code = attribute.permissions.readError(at: client.security, authorized: client.authorized) {
                if entries.isEmpty { return error(ReadByGroupTypeRequest.opcode, attribute.handle, code) }
                break
            }
            let value = Array(currentValue(attribute, client).prefix(limit))
            if let length = entries.first?.value.count, length != value.count { break }
            guard used + 4 + value.count <= client.mtu else { break }
            used += 4 + value.count
            entries.append(
                ReadByGroupTypeResponse.AttributeData(
                    handle: attribute.handle, endGroupHandle: attribute.groupEndHandle, value: value))
        }
        guard !entries.isEmpty else {
            return error(ReadByGroupTypeRequest.opcode, request.startingHandle, .attributeNotFound)
        }
        return .readByGroupTypeResponse(ReadByGroupTypeResponse(entries: entries))
    }
}
