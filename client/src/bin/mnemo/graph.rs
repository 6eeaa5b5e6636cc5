//! `mnemo graph`: what a memory or an entity is linked to, and the path between two.

use std::path::Path;

use clap::{Args, Subcommand};
use mnemo_protocol::graph::{
    Edge, EdgeType, Neighbors, NeighborsParams, Node, NodeInfo, NodeKind, Path as GraphPath,
    PathParams,
};

use crate::connect;
use crate::output::Output;

#[derive(Args, Debug)]
#[command(args_conflicts_with_subcommands = true)]
pub struct GraphArgs {
    #[command(subcommand)]
    command: Option<GraphCommand>,
    /// A memory id, or `entity:NAME` for an entity (any case).
    node: Option<String>,
    #[command(flatten)]
    scope: Scope,
    /// Steps out, 1–3.
    #[arg(long, default_value_t = 1)]
    depth: usize,
    /// Most nodes shown, 1–500.
    #[arg(long, default_value_t = 100)]
    limit: usize,
    /// Only edges at least this strong, 0–1.
    #[arg(long)]
    min_weight: Option<f32>,
}

#[derive(Args, Debug)]
struct Scope {
    /// The namespace of an entity (a memory knows its own).
    #[arg(long, short = 'n')]
    namespace: Option<String>,
    /// Only these edge types (repeat, e.g. --type mentions --type temporal_sequence).
    #[arg(long = "type", value_parser = parse_type)]
    types: Vec<EdgeType>,
}

#[derive(Subcommand, Debug)]
enum GraphCommand {
    /// The strongest path of at most --max-depth steps between two nodes.
    Path {
        /// A memory id, or `entity:NAME`.
        from: String,
        /// A memory id, or `entity:NAME`.
        to: String,
        #[command(flatten)]
        scope: Scope,
        /// Longest path looked for, 1–3 steps.
        #[arg(long, default_value_t = 3)]
        max_depth: usize,
    },
}

fn parse_type(s: &str) -> Result<EdgeType, String> {
    s.parse()
}

fn node(arg: &str) -> Node {
    match arg.strip_prefix("entity:") {
        Some(name) => Node::entity(name),
        None => Node::memory(arg),
    }
}

pub async fn run(args: GraphArgs, socket: &Path, out: &Output) -> anyhow::Result<()> {
    let mut client = connect(socket).await?;
    match (args.command, args.node) {
        (Some(GraphCommand::Path {
            from,
            to,
            scope,
            max_depth,
        }), _) => {
            let r = client
                .call::<GraphPath>(&PathParams {
                    from: node(&from),
                    to: node(&to),
                    namespace: scope.namespace,
                    types: scope.types,
                    max_depth: Some(max_depth),
                })
                .await?;
            out.value(&r, || {
                if r.nodes.is_empty() {
                    return format!("no path of at most {max_depth} steps from {from} to {to}");
                }
                let mut lines = vec![format!(
                    "{} steps, cost {:.2}",
                    r.edges.len(),
                    r.cost.unwrap_or_default()
                )];
                for (i, n) in r.nodes.iter().enumerate() {
                    if let Some(e) = i.checked_sub(1).and_then(|j| r.edges.get(j)) {
                        lines.push(format!("   │ {} {:.2}", e.edge_type, e.weight));
                    }
                    lines.push(format!("   {}", node_line(n)));
                }
                lines.join("\n")
            });
        }
        (None, Some(start)) => {
            let r = client
                .call::<Neighbors>(&NeighborsParams {
                    node: node(&start),
                    namespace: args.scope.namespace,
                    types: args.scope.types,
                    min_weight: args.min_weight,
                    depth: Some(args.depth),
                    limit: Some(args.limit),
                })
                .await?;
            out.value(&r, || {
                let mut lines: Vec<String> = r
                    .nodes
                    .iter()
                    .map(|n| format!("{}{}", "  ".repeat(n.depth), node_line(n)))
                    .collect();
                lines.push(format!("{} edges:", r.edges.len()));
                lines.extend(r.edges.iter().map(edge_line));
                if r.truncated {
                    lines.push(format!(
                        "(more nodes were in reach; raise --limit above {})",
                        args.limit
                    ));
                }
                lines.join("\n")
            });
        }
        (None, None) => anyhow::bail!(
            "say which node: `mnemo graph <memory id>` or `mnemo graph entity:<name>` (or `mnemo graph path A B`)"
        ),
    }
    Ok(())
}

fn node_line(n: &NodeInfo) -> String {
    match n.node.kind {
        NodeKind::Memory => format!("memory {}  {}", n.node.id, n.label),
        NodeKind::Entity => format!("entity {}", n.label),
    }
}

fn edge_line(e: &Edge) -> String {
    format!(
        "  {} {} → {} {}  {} {:.2} (activated {}×)",
        e.src.kind.as_str(),
        e.src.id,
        e.dst.kind.as_str(),
        e.dst.id,
        e.edge_type,
        e.weight,
        e.activation_count
    )
}
