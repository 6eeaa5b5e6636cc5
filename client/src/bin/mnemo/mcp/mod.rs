//! `mnemo mcp`: an MCP server on stdio, built on the official Rust SDK, that forwards every
//! tool call and resource read to mnemod over its socket. Stdout carries only the protocol;
//! logs go to stderr. The handshake never waits on mnemod: the connection (and, when nothing
//! answers, mnemod's start) happens beside it, and a call that finds no daemon is a tool error.

mod agent_tools;
mod link;
mod model_tools;
mod render;
mod resources;
mod tools;

use std::path::Path;
use std::sync::Arc;

use clap::Args;
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::model::{
    Implementation, ListResourceTemplatesResult, ListResourcesResult, PaginatedRequestParams,
    ReadResourceRequestParams, ReadResourceResponse, ReadResourceResult, ServerCapabilities,
    ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::{tool_handler, ErrorData, RoleServer, ServerHandler, ServiceExt};

use link::Link;

#[derive(Args, Debug)]
pub struct McpArgs {
    /// Do not start mnemod when nothing answers; tool calls then say it is not running.
    #[arg(long)]
    no_start: bool,
}

const INSTRUCTIONS: &str = "mnemo is the user's own long-term memory, kept on their machine. \
    Call `recall` before answering anything that may depend on what the user told you before \
    (their preferences, people, projects, past events), and `remember` when they tell you \
    something worth keeping: one self-contained statement per call. `forget` deletes for real \
    when the user asks.";

#[derive(Clone)]
pub struct MnemoServer {
    link: Arc<Link>,
    tool_router: ToolRouter<Self>,
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for MnemoServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_resources()
                .build(),
        )
        .with_server_info(Implementation::new("mnemo", env!("CARGO_PKG_VERSION")))
        .with_instructions(INSTRUCTIONS)
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        Ok(ListResourcesResult::with_all_items(resources::list()))
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        Ok(ListResourceTemplatesResult::with_all_items(
            resources::templates(),
        ))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let contents = resources::read(&self.link, &request.uri).await?;
        Ok(ReadResourceResult::new(vec![contents]).into())
    }
}

/// Serves MCP on stdin/stdout until the client closes them.
pub async fn run(args: McpArgs, socket: &Path) -> anyhow::Result<()> {
    // Stdout is the protocol's: every log line goes to stderr, which MCP clients show or keep.
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("MNEMO_LOG_LEVEL")
                .unwrap_or_else(|_| "info,rmcp=warn".into()),
        )
        .init();
    let link = Arc::new(Link::new(socket.to_path_buf(), !args.no_start));
    let server = MnemoServer {
        link: link.clone(),
        tool_router: MnemoServer::tool_router()
            + MnemoServer::model_router()
            + MnemoServer::agent_router(),
    };
    tokio::spawn(async move { link.warm().await });
    let service = server.serve(rmcp::transport::stdio()).await?;
    service.waiting().await?;
    Ok(())
}
