/* commands.h - the subcommands main() dispatches to; each returns the exit status. */
#ifndef PC_COMMANDS_H
#define PC_COMMANDS_H

int pc_cmd_kmeans(int argc, char **argv);
int pc_cmd_dbscan(int argc, char **argv);
int pc_cmd_dpc(int argc, char **argv);
int pc_cmd_streamkm(int argc, char **argv);
int pc_cmd_stream(int argc, char **argv);
int pc_cmd_info(int argc, char **argv);
int pc_cmd_generate(int argc, char **argv);

#endif
