# Sourced by dbconfig-load-include (format sh) when idemorders is
# upgraded from a version that left the database to the administrator:
# the database, user and password the config already uses.
conf=/etc/idemorders/idemorders.conf
key() {
	sed -n "s/^[[:space:]]*$1[[:space:]]*=[[:space:]]*//p" "$conf" 2>/dev/null |
	    tail -n 1 | sed 's/[[:space:]]#.*//; s/[[:space:]]*$//'
}
dbname=$(key db_name)
dbuser=$(key db_user)
pwfile=$(key db_password_file)
if [ -n "$pwfile" ] && [ -r "$pwfile" ]; then
	dbpass=$(head -n 1 "$pwfile")
else
	dbpass=$(key db_password)
fi
unset conf pwfile
