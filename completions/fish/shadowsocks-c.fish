# SPDX-License-Identifier: MIT
# fish completion for ss-local, ss-server, ss-tunnel, ss-redir and ss-manager
# (shadowsocks-c), installed as ss-local.fish, ss-server.fish, ss-tunnel.fish,
# ss-redir.fish and ss-manager.fish.

function __ss_methods
    printf '%s\n' aes-128-gcm aes-192-gcm aes-256-gcm chacha20-ietf-poly1305 \
        xchacha20-ietf-poly1305 2022-blake3-aes-128-gcm 2022-blake3-aes-256-gcm \
        2022-blake3-chacha20-poly1305 none plain
end

# SIP003 plugins in PATH, by the names they go by.
function __ss_plugins
    for d in $PATH
        for f in $d/*-plugin $d/obfs-local $d/obfs-server $d/kcptun-* $d/ck-client \
                $d/ck-server $d/simple-tls $d/gq-client $d/gq-server
            if test -x $f -a ! -d $f
                basename $f
            end
        end
    end | sort -u
end

for prog in ss-local ss-server ss-tunnel ss-redir ss-manager
    complete -c $prog -f
    complete -c $prog -s m -x -a '(__ss_methods)' -d 'Encryption method'
    complete -c $prog -s a -x -a '(__fish_complete_users)' -d 'Switch to this user'
    complete -c $prog -s f -r -F -d 'Run in the background, pid file'
    complete -c $prog -s t -x -d 'Idle timeout in seconds'
    complete -c $prog -s c -r -F -d 'JSON configuration file'
    complete -c $prog -s n -x -d 'Open files limit'
    complete -c $prog -s i -x -a '(__fish_print_interfaces)' -d 'Outbound network interface'
    complete -c $prog -s b -x -d 'Local address'
    complete -c $prog -s u -d 'Relay UDP as well as TCP'
    complete -c $prog -s U -d 'Relay UDP only'
    complete -c $prog -s 6 -d 'Prefer IPv6 when resolving'
    complete -c $prog -s d -x -d 'Name servers, comma-separated'
    complete -c $prog -s v -d 'More log output'
    complete -c $prog -s h -l help -d 'Show the options'
    complete -c $prog -l version -d 'Version, crypto in use and libraries'
    complete -c $prog -l fast-open -d 'TCP Fast Open'
    complete -c $prog -l reuse-port -d 'SO_REUSEPORT on listening sockets'
    complete -c $prog -l no-delay -d 'TCP_NODELAY'
    complete -c $prog -l mptcp -d 'Multipath TCP'
    complete -c $prog -l mtu -x -d 'MTU for UDP'
    complete -c $prog -l acl -r -F -d 'Access control list file'
    complete -c $prog -l plugin -r -F -a '(__ss_plugins)' -d 'SIP003 plugin'
    complete -c $prog -l plugin-opts -x -d 'Plugin options (SS_PLUGIN_OPTIONS)'
    complete -c $prog -l plugin-mode -x -a 'tcp_only tcp_and_udp udp_only' -d 'What goes through the plugin'
    complete -c $prog -l udp-timeout -x -d 'UDP association idle timeout in seconds'
end
for prog in ss-local ss-server ss-tunnel ss-redir
    complete -c $prog -s p -x -d 'Server port'
    complete -c $prog -s l -x -d 'Local port'
    complete -c $prog -s k -l password -x -d 'Password'
    complete -c $prog -l key -x -d 'Key in base64, instead of a password'
    complete -c $prog -l check -d 'Check the configuration, print what would run'
    complete -c $prog -l udp-max-associations -x -d 'Most UDP associations at once'
    complete -c $prog -l workers -x -d 'Loops, each on a thread of its own'
end
complete -c ss-server -s s -x -d 'Address to listen on'
complete -c ss-server -l print-url -d 'Print the ss:// URL and QR code a client needs'
complete -c ss-server -l manager-address -r -d 'Send traffic figures to a manager (host:port or Unix socket)'
complete -c ss-server -l metrics -r -d 'Serve Prometheus metrics at addr:port'
complete -c ss-server -l block-private -d 'Refuse loopback, private and link-local targets'
complete -c ss-local -c ss-tunnel -c ss-redir -s s -x -d 'Server host, or an ss:// URL'
complete -c ss-local -c ss-tunnel -c ss-redir -l server-url -x -d 'A server as an ss:// URL (SIP002)'
complete -c ss-local -l socks-user -x -d 'SOCKS5 user clients must log in as'
complete -c ss-local -l socks-pass -x -d 'That SOCKS5 user'"'"'s password'
complete -c ss-local -l socks-users -r -F -d 'File of SOCKS5 users, name:password a line'
complete -c ss-local -l dns -x -d 'Answer DNS here, UDP and TCP (addr:port)'
complete -c ss-local -l remote-dns -x -d 'Name server asked through the server (addr:port)'
complete -c ss-local -l local-dns -x -d 'Name server asked directly (addr:port)'
complete -c ss-local -c ss-tunnel -c ss-redir -l online-config -x -d 'Servers from an online configuration (SIP008) at this URL'
complete -c ss-local -c ss-tunnel -c ss-redir -l ca-file -r -F -d 'CA certificates the online configuration'"'"'s server is checked against'
complete -c ss-tunnel -s L -x -d 'Tunnel destination host:port'
complete -c ss-redir -s T -l tcp-tproxy -d 'TCP arrives by TPROXY, not REDIRECT'
complete -c ss-manager -s s -x -d 'Address the ports listen on'
complete -c ss-manager -l manager-address -r -d 'Where commands come: host:port or a Unix socket'
complete -c ss-manager -l executable -r -F -d 'Ignored: every port runs in the manager'
complete -c ss-manager -s D -l workdir -x -a '(__fish_complete_directories)' -d 'Working directory, where the state file is kept'
complete -c ss-manager -l state -r -F -d 'The file the ports are kept in'
complete -c ss-manager -l block-private -d 'Ports refuse private targets (the default)'
complete -c ss-manager -l workers -x -d 'Loops the ports are served on, each on a thread of its own'
complete -c ss-manager -l metrics -r -d 'Serve every port'"'"'s figures as Prometheus text at addr:port'
