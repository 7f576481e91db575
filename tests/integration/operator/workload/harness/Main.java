import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;

/**
 * The harness of the Java example of docs/workload-identity.md (WorkloadConnections, the page's code): one
 * WorkloadConnections for the bundle where sslCert points; for each credential bundle named on the command
 * line, put it there (one rename, as the kubelet refreshes it), take a new connection and print who it
 * logged in as.
 */
public final class Main {
    public static void main(String[] args) throws Exception {
        Path live = Path.of(System.getenv("sslCert"));
        WorkloadConnections connections = null;
        for (String bundle : args) {
            Path next = live.resolveSibling(live.getFileName() + ".next");
            Files.copy(Path.of(bundle), next, StandardCopyOption.REPLACE_EXISTING);
            Files.move(next, live, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
            if (connections == null) {
                connections = new WorkloadConnections(live);
            }
            try (Connection connection = connections.open();
                    Statement statement = connection.createStatement();
                    ResultSet row = statement.executeQuery("SELECT CURRENT_USER(), COALESCE(DATABASE(), '')")) {
                row.next();
                System.out.println(row.getString(1) + "\t" + row.getString(2));
            }
        }
    }
}
