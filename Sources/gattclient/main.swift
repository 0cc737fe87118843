import GATTClientCLI

#if canImport(Glibc)
import Glibc
#endif

exit(runGATTClient(Array(CommandLine.arguments.dropFirst())))
